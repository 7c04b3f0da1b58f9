package reducer

import "github.com/ahp-bridge/ahp-bridge/ahp/wire"

// Session applies a to the session state s.
func Session(s *wire.SessionState, a wire.StateAction, clock Clock) {
	// TODO(reducer): not written yet.
}
