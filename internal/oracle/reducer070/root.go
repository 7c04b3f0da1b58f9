package reducer070

import (
	"maps"

	"github.com/ahp-bridge/ahp-bridge/ahp/v070/wire"
)

// Root applies a to the root state s.
func Root(s *wire.RootState, a wire.StateAction, clock Clock) {
	if s == nil {
		return
	}
	switch a := actionValue(a).(type) {
	case *wire.RootAgentsChangedAction:
		s.Agents = clone(a.Agents)
	case *wire.RootActiveSessionsChangedAction:
		s.ActiveSessions = wire.Ptr(a.ActiveSessions)
	case *wire.RootTerminalsChangedAction:
		s.Terminals = clone(a.Terminals)
	case *wire.RootConfigChangedAction:
		// Values without a schema would describe nothing a client can render,
		// so a host that never published a config cannot gain one this way.
		if s.Config == nil {
			return
		}
		s.Config.Values = mergeConfig(s.Config.Values, a.Config, a.Replace != nil && *a.Replace)
	}
}

// mergeConfig returns cur with upd merged in, or a copy of upd alone when
// replace is set. The result is always a new map because a client may still
// hold (and render) the old one.
func mergeConfig(cur, upd map[string]any, replace bool) map[string]any {
	out := map[string]any{}
	if !replace {
		maps.Copy(out, cur)
	}
	maps.Copy(out, clone(upd))
	return out
}
