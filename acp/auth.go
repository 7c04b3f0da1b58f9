package acp

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"

	"github.com/ahp-bridge/ahp-bridge/backend"
	sdk "github.com/coder/acp-go-sdk"
)

// codeAuthRequired is ACP's "authentication required" error code.
const codeAuthRequired = -32000

// isAuthRequired reports whether err is the agent's "authentication
// required" answer.
func isAuthRequired(err error) bool {
	var re *sdk.RequestError
	return errors.As(err, &re) && re.Code == codeAuthRequired
}

// elsewhere matches a method description that sends the user to a
// terminal or a browser: claude-code-acp's agent-type method says "Run
// `claude /login` in the terminal", which the agent cannot do when asked.
var elsewhere = regexp.MustCompile(`(?i)\b(terminal|browser|run\s+` + "`" + `)`)

// authMethodsOf reads the authMethods of initialize.
func authMethodsOf(ms []sdk.AuthMethod) []backend.AuthMethod {
	out := make([]backend.AuthMethod, 0, len(ms))
	for _, m := range ms {
		var am backend.AuthMethod
		switch {
		case m.Terminal != nil:
			am = backend.AuthMethod{ID: m.Terminal.Id, Name: m.Terminal.Name, Description: deref(m.Terminal.Description),
				Kind: backend.AuthTerminal, OnAgentMachine: true, Args: m.Terminal.Args}
		case m.EnvVar != nil:
			am = backend.AuthMethod{ID: m.EnvVar.Id, Name: m.EnvVar.Name, Description: deref(m.EnvVar.Description),
				Kind: backend.AuthEnvVar, OnAgentMachine: true}
			for _, v := range m.EnvVar.Vars {
				am.Vars = append(am.Vars, v.Name)
			}
		case m.Agent != nil:
			am = backend.AuthMethod{ID: m.Agent.Id, Name: m.Agent.Name, Description: deref(m.Agent.Description), Kind: backend.AuthAgent}
			am.OnAgentMachine = elsewhere.MatchString(am.Description)
		default:
			continue
		}
		out = append(out, am)
	}
	return out
}

func deref[T any](p *T) T {
	var zero T
	if p != nil {
		return *p
	}
	return zero
}

// noteAuthMethods records the sign-in methods a (re)started agent lists.
func (p *Provider) noteAuthMethods(ms []backend.AuthMethod) {
	p.mu.Lock()
	changed := !slices.EqualFunc(ms, p.auth.Methods, sameMethod)
	p.auth.Methods = ms
	p.mu.Unlock()
	if changed {
		p.infoChanged()
	}
}

func sameMethod(a, b backend.AuthMethod) bool {
	return a.ID == b.ID && a.Name == b.Name && a.Description == b.Description && a.Kind == b.Kind
}

// authRequired records that the agent would not open a session before a
// sign-in, and returns the error OpenSession gives for it.
func (p *Provider) authRequired(a *agentProc, err error) error {
	p.mu.Lock()
	changed := !p.auth.Required || p.auth.Authenticated
	p.auth.Required, p.auth.Authenticated = true, false
	methods := slices.Clone(p.auth.Methods)
	p.mu.Unlock()
	if changed {
		p.infoChanged()
	}
	return &backend.AuthRequiredError{Methods: methods, Err: a.describeErr("creating the agent session", err)}
}

func (p *Provider) infoChanged() {
	if p.cfg.OnInfoChanged != nil {
		p.cfg.OnInfoChanged()
	}
}

// authInfo is the provider's sign-in as Info shows it; nil while the agent
// has listed no method and asked for none. Called with p.mu held.
func (p *Provider) authInfoLocked() *backend.AuthInfo {
	if len(p.auth.Methods) == 0 && !p.auth.Required {
		return nil
	}
	ai := p.auth
	ai.Methods = slices.Clone(ai.Methods)
	return &ai
}

// Authenticate implements backend.Authenticator: ACP authenticate with one
// of the agent's methods. A method that needs a person at the agent's
// machine, and that the agent does not carry out when asked, gives an
// error wrapping backend.ErrSignInElsewhere with the agent's words.
func (p *Provider) Authenticate(ctx context.Context, methodID string) error {
	a, err := p.ensure(ctx)
	if err != nil {
		return err
	}
	p.mu.Lock()
	i := slices.IndexFunc(p.auth.Methods, func(m backend.AuthMethod) bool { return m.ID == methodID })
	var m backend.AuthMethod
	if i >= 0 {
		m = p.auth.Methods[i]
	}
	p.mu.Unlock()
	if i < 0 {
		return fmt.Errorf("the agent has no sign-in method %q", methodID)
	}
	if _, err := a.conn.Authenticate(ctx, sdk.AuthenticateRequest{MethodId: methodID}); err != nil {
		if m.OnAgentMachine {
			return fmt.Errorf("%w: %w", backend.ErrSignInElsewhere, a.describeErr("authenticate", err))
		}
		return a.describeErr("authenticate", err)
	}
	p.mu.Lock()
	p.auth.Authenticated = true
	p.mu.Unlock()
	p.infoChanged()
	p.log.Info().Str("method", methodID).Msg("signed in to the agent")
	return nil
}
