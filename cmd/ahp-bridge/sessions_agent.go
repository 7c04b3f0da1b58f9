package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// This file lets `ahp-bridge sessions delete` delete the agents' own
// sessions behind a deleted session too (issue 29): given the agents
// (--config FILE or --acp ID=COMMAND, as for serve), once a session is
// deleted (a session another bridge drives is not), it starts the
// session's agent and sends it ACP session/delete for each chat's agent
// session, when the agent advertises it, saying so first. Without the
// agent configured, it says which agent sessions it keeps.

// agentDeleteTimeout bounds starting an agent and deleting one session.
const agentDeleteTimeout = 60 * time.Second

// agentDeleter deletes agent sessions with the configured agents.
type agentDeleter struct {
	agents  map[string]AgentConfig
	started map[string]backend.Provider
	w       io.Writer
}

// newAgentDeleter reads the agents of --config and --acp (none given: no
// agent is asked).
func newAgentDeleter(cfgFile string, acps []string, w io.Writer) (*agentDeleter, error) {
	d := &agentDeleter{agents: map[string]AgentConfig{}, started: map[string]backend.Provider{}, w: w}
	if cfgFile != "" {
		cfg, err := loadConfigFile(cfgFile)
		if err != nil {
			return nil, err
		}
		for _, a := range cfg.Agents {
			d.agents[a.ID] = a
		}
	}
	for _, a := range acps {
		id, command, ok := strings.Cut(a, "=")
		if !ok || id == "" || strings.TrimSpace(command) == "" {
			return nil, argErrorf("--acp %q: want ID=COMMAND, e.g. --acp claude='npx @zed-industries/claude-code-acp'", a)
		}
		d.agents[id] = AgentConfig{ID: id, Command: command}
	}
	return d, nil
}

// agentSessions are the agent sessions behind a stored session.
type agentSessions struct {
	provider string
	ids      []string
}

// behind reads the agent sessions behind the stored session uri, before
// it is deleted.
func (d *agentDeleter) behind(ctx context.Context, st store.Store, uri string) agentSessions {
	if d == nil || len(d.agents) == 0 {
		return agentSessions{} // no agent named: the agents' sessions are not asked about
	}
	rec, err := st.GetSession(ctx, uri)
	if err != nil {
		return agentSessions{} // the session's own deletion says why
	}
	out := agentSessions{provider: rec.Session.Provider}
	for _, c := range rec.Chats {
		if c.ACPSessionID != "" {
			out.ids = append(out.ids, c.ACPSessionID)
		}
	}
	return out
}

// delete deletes the agent sessions behind a deleted session, saying what
// it does. A failure is reported, not returned: the session is gone.
func (d *agentDeleter) delete(ctx context.Context, as agentSessions) {
	if d == nil {
		return
	}
	provider := as.provider
	for _, id := range as.ids {
		a, ok := d.agents[provider]
		if !ok {
			fmt.Fprintf(d.w, "kept the %s agent's own session %s: name the agent (--config FILE or --acp %s=COMMAND) to delete it too\n", provider, id, provider)
			continue
		}
		p, err := d.provider(a)
		if err == nil {
			as, ok := p.(backend.AgentSessions)
			if !ok {
				fmt.Fprintf(d.w, "kept the %s agent's own session %s: the agent cannot delete sessions\n", provider, id)
				continue
			}
			fmt.Fprintf(d.w, "deleting the %s agent's own session %s (ACP session/delete)\n", provider, id)
			dctx, cancel := context.WithTimeout(ctx, agentDeleteTimeout)
			var deleted bool
			deleted, err = as.DeleteAgentSession(dctx, id)
			cancel()
			if err == nil && !deleted {
				fmt.Fprintf(d.w, "kept the %s agent's own session %s: the agent does not advertise session/delete\n", provider, id)
				continue
			}
		}
		if err != nil {
			fmt.Fprintf(d.w, "the %s agent's own session %s was not deleted: %v\n", provider, id, err)
			continue
		}
		fmt.Fprintf(d.w, "deleted the %s agent's own session %s\n", provider, id)
	}
}

// provider starts (once) the agent a names.
func (d *agentDeleter) provider(a AgentConfig) (backend.Provider, error) {
	if p, ok := d.started[a.ID]; ok {
		return p, nil
	}
	bp, err := buildAgent(a, true, zerolog.Nop())
	if err != nil {
		return nil, err
	}
	d.started[a.ID] = bp.provider
	return bp.provider, nil
}

// close stops the agents started.
func (d *agentDeleter) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, p := range d.started {
		_ = p.Close(ctx)
	}
}
