package reducer

import "github.com/ahp-bridge/ahp-bridge/ahp/wire"

// Terminal applies a to the terminal state s.
func Terminal(s *wire.TerminalState, a wire.StateAction, clock Clock) {
	// TODO(reducer): not written yet.
}
