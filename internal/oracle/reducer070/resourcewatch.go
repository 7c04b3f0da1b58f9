package reducer070

import "github.com/ahp-bridge/ahp-bridge/ahp/v070/wire"

// ResourceWatch applies a to the resource-watch state s. A watch's state is
// only its descriptor, fixed when the watch is created; resourceWatch/changed
// delivers events to subscribers without being kept, so every action is a
// no-op. The function exists so that every channel has a reducer and Apply
// accepts the state.
func ResourceWatch(s *wire.ResourceWatchState, a wire.StateAction, clock Clock) {}
