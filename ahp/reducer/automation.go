package reducer

import (
	"slices"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// Automations applies a to the automation catalogue s (the
// ahp-automations:// channel, AHP 0.9.0). automation/set upserts an entry
// by its resource, in place when it is known and at the end when it is not;
// automation/removed drops one, an unknown resource being a no-op. The
// client's automation/createRequested and automation/updateRequested are
// side-effect requests that leave the catalogue alone until the host
// answers with automation/set, so they are no-ops here.
func Automations(s *wire.AutomationState, a wire.StateAction, clock Clock) {
	if s == nil {
		return
	}
	switch a := actionValue(a).(type) {
	case *wire.AutomationSetAction:
		entry := clone(a.Automation)
		if i := automationIndex(s, entry.Resource); i >= 0 {
			s.Entries[i] = entry
			return
		}
		s.Entries = append(s.Entries, entry)
	case *wire.AutomationRemovedAction:
		if i := automationIndex(s, a.Resource); i >= 0 {
			s.Entries = slices.Delete(s.Entries, i, i+1)
		}
	}
}

func automationIndex(s *wire.AutomationState, resource string) int {
	return slices.IndexFunc(s.Entries, func(e wire.AutomationEntry) bool { return e.Resource == resource })
}

// AutomationRun applies a to the state of one automation run (an
// ahp-automation-run: channel, AHP 0.9.0). The lifecycle is replaced whole;
// sessions are a set kept in order, so adding a linked session twice is a
// no-op; removing the primary session also clears primarySession. The
// client's automationRun/cancelRequested leaves the state alone: the
// outcome arrives as a lifecycle change.
func AutomationRun(s *wire.AutomationRunState, a wire.StateAction, clock Clock) {
	if s == nil {
		return
	}
	switch a := actionValue(a).(type) {
	case *wire.AutomationRunLifecycleChangedAction:
		s.Lifecycle = clone(a.Lifecycle)
	case *wire.AutomationRunSessionSetAction:
		if !slices.Contains(s.Sessions, a.Session) {
			s.Sessions = append(s.Sessions, a.Session)
		}
	case *wire.AutomationRunSessionRemovedAction:
		i := slices.Index(s.Sessions, a.Session)
		if i < 0 {
			return
		}
		s.Sessions = slices.Delete(s.Sessions, i, i+1)
		if s.PrimarySession != nil && *s.PrimarySession == a.Session {
			s.PrimarySession = nil
		}
	case *wire.AutomationRunPrimarySessionChangedAction:
		s.PrimarySession = clone(a.PrimarySession)
	}
}

// Canvas applies a to the state of one live canvas (an ahp-canvas:
// channel, AHP 1.0.0): canvas/stateChanged replaces it whole.
func Canvas(s *wire.CanvasState, a wire.StateAction, clock Clock) {
	if s == nil {
		return
	}
	if a, ok := actionValue(a).(*wire.CanvasStateChangedAction); ok {
		*s = clone(a.Canvas)
	}
}
