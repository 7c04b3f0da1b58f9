package reducer

import "github.com/ahp-bridge/ahp-bridge/ahp/wire"

// Root applies a to the root state s.
func Root(s *wire.RootState, a wire.StateAction, clock Clock) {
	// TODO(reducer): not written yet.
}
