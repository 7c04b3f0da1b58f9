package bridge

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/ahp-bridge/ahp-bridge/ahp/host"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
)

// Agent sign-in (docs/mapping.md, "Agent sign-in"). Each sign-in method an
// agent lists is an AHP protected resource of its provider
// (AgentInfo.protectedResources), whose `resource` names the method; a
// client's `authenticate` for it is ACP `authenticate` with that method (the
// token is not used: ACP methods take none). A session created while the
// agent wants a sign-in waits in `creating` for one and then starts; a
// createSession after the agent said so is answered AuthRequired (−32007).

// authHost is what sign-in needs of the host beyond Host (*host.Host has
// it; a test host may not).
type authHost interface {
	NotifyAuthRequired(channel string, resource wire.ProtectedResourceMetadata, reason wire.AuthRequiredReason)
}

// authResource is the protected resource of one sign-in method.
func authResource(provider, method string) string {
	return "ahp-bridge:/agents/" + url.PathEscape(provider) + "/auth/" + url.PathEscape(method)
}

// parseAuthResource is the reverse of authResource.
func parseAuthResource(resource string) (provider, method string, ok bool) {
	rest, ok := strings.CutPrefix(resource, "ahp-bridge:/agents/")
	if !ok {
		return "", "", false
	}
	p, m, ok := strings.Cut(rest, "/auth/")
	if !ok {
		return "", "", false
	}
	p, err1 := url.PathUnescape(p)
	m, err2 := url.PathUnescape(m)
	return p, m, err1 == nil && err2 == nil && p != "" && m != ""
}

// protectedResources describes an agent's sign-in methods. A method that
// needs a person at the agent's machine says so, and how, in its name: the
// bridge cannot do it for them.
func protectedResources(provider string, auth *backend.AuthInfo) []wire.ProtectedResourceMetadata {
	if auth == nil {
		return nil
	}
	required := auth.Required && !auth.Authenticated
	out := make([]wire.ProtectedResourceMetadata, 0, len(auth.Methods))
	for _, m := range auth.Methods {
		out = append(out, wire.ProtectedResourceMetadata{
			Resource:     authResource(provider, m.ID),
			ResourceName: wire.Ptr(describeMethod(m)),
			Required:     wire.Ptr(required),
		})
	}
	return out
}

// describeMethod words a sign-in method for a person.
func describeMethod(m backend.AuthMethod) string {
	s := firstNonEmpty(m.Name, m.ID)
	if m.Description != "" {
		s += ": " + m.Description
	}
	switch m.Kind {
	case backend.AuthTerminal:
		cmd := "the agent's command"
		if len(m.Args) > 0 {
			cmd += " with " + strings.Join(m.Args, " ")
		}
		s += fmt.Sprintf(" (done in a terminal on the agent's machine: run %s there, then authenticate here)", cmd)
	case backend.AuthEnvVar:
		s += fmt.Sprintf(" (set %s where the agent runs, then restart the bridge)", strings.Join(m.Vars, ", "))
	default:
		if m.OnAgentMachine {
			s += " (done on the agent's machine, in a terminal or browser there; then authenticate here)"
		}
	}
	return s
}

// AuthRequired implements host.Authenticator: createSession of a provider
// whose agent said it wants a sign-in first, and has none yet, is refused
// with the methods to sign in with.
func (b *Bridge) AuthRequired(provider string) *host.Error {
	p, id, _ := b.provider(provider)
	if p == nil {
		return nil
	}
	info := p.Info()
	if info.Auth == nil || !info.Auth.Required || info.Auth.Authenticated {
		return nil
	}
	res := protectedResources(id, info.Auth)
	e := host.Errorf(host.CodeAuthRequired, "the %s agent requires signing in before a session can start: authenticate with one of its protectedResources", id)
	e.Data = map[string]any{"resources": res}
	return e
}

// Authenticate implements host.Authenticator: ACP authenticate with the
// method the resource names; sessions waiting for it then start.
func (b *Bridge) Authenticate(ctx context.Context, params wire.AuthenticateParams) error {
	provider, method, ok := parseAuthResource(params.Resource)
	if !ok {
		return host.Errorf(host.CodeInvalidParams, "invalid params for authenticate: %q is not a resource this server advertised", params.Resource)
	}
	p, _, _ := b.provider(provider)
	if p == nil {
		return host.Errorf(host.CodeInvalidParams, "invalid params for authenticate: no agent provider %q is configured", provider)
	}
	a, ok := p.(backend.Authenticator)
	if !ok {
		return host.Errorf(host.CodeInvalidParams, "invalid params for authenticate: the %s agent has no sign-in", provider)
	}
	err := a.Authenticate(ctx, method)
	b.authChanged(provider)
	if err != nil {
		b.log.Info().Err(err).Str("provider", provider).Str("method", method).Msg("signing in to the agent failed")
		if errors.Is(err, backend.ErrSignInElsewhere) {
			return host.Errorf(host.CodeAuthRequired, "%v", err)
		}
		return host.Errorf(host.CodeAuthRequired, "signing in to the %s agent with %q failed: %v", provider, method, err)
	}
	b.retryAwaitingAuth(provider)
	return nil
}

// authChanged republishes the agent list when a provider's sign-in state
// changed since it was last published.
func (b *Bridge) authChanged(provider string) {
	p, _, _ := b.provider(provider)
	if p == nil {
		return
	}
	key := authKey(p.Info().Auth) + capsKey(p) // external.go: what the agent can do
	b.mu.Lock()
	same := b.authSeen[provider] == key
	b.authSeen[provider] = key
	b.mu.Unlock()
	if !same {
		if err := b.publishAgents(); err != nil {
			b.log.Warn().Err(err).Msg("could not republish agents")
		}
	}
}

func authKey(a *backend.AuthInfo) string {
	if a == nil {
		return ""
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%t/%t", a.Required, a.Authenticated)
	for _, m := range a.Methods {
		sb.WriteString("|" + m.ID + "\x00" + m.Name + "\x00" + m.Description)
	}
	return sb.String()
}

// awaitAuth parks a default chat whose agent would not open a session
// before a sign-in: the session stays `creating`, its clients are told
// (auth/required on the session and the root channel), and a successful
// authenticate opens it.
func (c *chat) awaitAuth(settings []setting, err *backend.AuthRequiredError) {
	s := c.sess
	c.b.mu.Lock()
	c.b.awaiting[s.providerID] = append(c.b.awaiting[s.providerID], awaitingChat{c: c, settings: settings})
	c.b.mu.Unlock()
	c.log.Info().Err(err).Msg("the agent requires signing in; the session waits for an authenticate")
	c.b.host.Progress(s.uri, fmt.Sprintf("the %s agent requires signing in: authenticate with one of its protected resources", s.providerID))
	c.b.authChanged(s.providerID)
	ah, ok := c.b.host.(authHost)
	if !ok {
		return
	}
	for _, r := range protectedResources(s.providerID, &backend.AuthInfo{Methods: err.Methods, Required: true}) {
		ah.NotifyAuthRequired(s.uri, r, wire.AuthRequiredReasonRequired)
		ah.NotifyAuthRequired(rootChannel, r, wire.AuthRequiredReasonRequired)
	}
}

// awaitingChat is a default chat waiting for a sign-in.
type awaitingChat struct {
	c        *chat
	settings []setting
}

// forgetAwaiting drops the chats of a disposed session from those waiting
// for a sign-in.
func (b *Bridge) forgetAwaiting(s *session) {
	b.mu.Lock()
	defer b.mu.Unlock()
	w := b.awaiting[s.providerID]
	kept := w[:0]
	for _, a := range w {
		if a.c.sess != s {
			kept = append(kept, a)
		}
	}
	if len(kept) == 0 {
		delete(b.awaiting, s.providerID)
	} else {
		b.awaiting[s.providerID] = kept
	}
}

// retryAwaitingAuth opens the sessions that waited for a sign-in.
func (b *Bridge) retryAwaitingAuth(provider string) {
	b.mu.Lock()
	waiting := b.awaiting[provider]
	delete(b.awaiting, provider)
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return
	}
	for _, w := range waiting {
		w.c.mu.Lock()
		disposed := w.c.disposed
		w.c.mu.Unlock()
		if disposed {
			continue
		}
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			w.c.open(b.ctx, w.settings)
		}()
	}
}

var _ host.Authenticator = (*Bridge)(nil)
