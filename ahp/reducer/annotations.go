package reducer

import "github.com/ahp-bridge/ahp-bridge/ahp/wire"

// Annotations applies a to the annotations state s.
func Annotations(s *wire.AnnotationsState, a wire.StateAction, clock Clock) {
	// TODO(reducer): not written yet.
}
