package reducer

import "github.com/ahp-bridge/ahp-bridge/ahp/wire"

// Changeset applies a to the changeset state s.
func Changeset(s *wire.ChangesetState, a wire.StateAction, clock Clock) {
	// TODO(reducer): not written yet.
}
