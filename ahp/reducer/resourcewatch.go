package reducer

import "github.com/ahp-bridge/ahp-bridge/ahp/wire"

// ResourceWatch applies a to the resourcewatch state s.
func ResourceWatch(s *wire.ResourceWatchState, a wire.StateAction, clock Clock) {
	// TODO(reducer): not written yet.
}
