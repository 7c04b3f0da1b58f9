package host

import (
	"context"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// Authenticator is implemented by a Handler whose agents users sign in to
// (docs/protocol-versions.md §5.16): it advertises protected resources in
// the agents' AgentInfo.protectedResources and takes `authenticate` for
// them.
type Authenticator interface {
	// Authenticate takes a client's authenticate for a resource the
	// handler advertised. An error is answered as it is when it is an
	// *Error (AuthRequired −32007 for a token that did not sign in,
	// InvalidParams −32602 for an unknown resource), else as an internal
	// error. It may take as long as signing in takes: it runs outside the
	// connection's read loop.
	Authenticate(ctx context.Context, params wire.AuthenticateParams) error

	// AuthRequired returns the AuthRequired (−32007) error, with its
	// data.resources, that createSession of provider gets while the
	// agent needs a sign-in first; nil when it does not.
	AuthRequired(provider string) *Error
}

// authenticate answers the authenticate command through the handler's
// Authenticator. A host whose handler has none advertises no protected
// resource, so none can be authenticated for: the spec's answer to an
// unrecognized resource is an error, InvalidParams (AuthRequired would
// tell the client to fetch a token, which cannot help).
func (h *Host) authenticate(ctx context.Context, r *request, _ string) {
	var p wire.AuthenticateParams
	if err := decodeParams("authenticate", r.params, &p); err != nil {
		h.reply(r, nil, err)
		return
	}
	auth, ok := h.handler.(Authenticator)
	if !ok {
		h.reply(r, nil, Errorf(CodeInvalidParams,
			"invalid params for authenticate: this server advertises no protected resources, so it takes no token for %q", p.Resource))
		return
	}
	h.async(r, func() (any, *Error) {
		if err := auth.Authenticate(ctx, p); err != nil {
			return nil, asRPCError(err)
		}
		return wire.AuthenticateResult{}, nil
	})
}

// authGate is createSession's check that the provider's agent needs no
// sign-in first (AuthRequired, −32007 with data.resources).
func (h *Host) authGate(provider string) *Error {
	if auth, ok := h.handler.(Authenticator); ok {
		return auth.AuthRequired(provider)
	}
	return nil
}

// NotifyAuthRequired sends auth/required to the subscribers of channel (the
// root channel for an agent's resource, a session for its own): a protected
// resource needs the client to authenticate (again).
func (h *Host) NotifyAuthRequired(channel string, resource wire.ProtectedResourceMetadata, reason wire.AuthRequiredReason) {
	params := wire.AuthRequiredParams{Channel: channel, Resource: resource, Reason: &reason}
	h.mu.Lock()
	defer h.mu.Unlock()
	if channel == RootURI {
		h.notifyLocked(wire.MethodAuthRequired, params, h.root.subs)
		return
	}
	if ch := h.channels[channel]; ch != nil {
		h.notifyLocked(wire.MethodAuthRequired, params, ch.subs)
	}
}
