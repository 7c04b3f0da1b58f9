package reducer

import "github.com/ahp-bridge/ahp-bridge/ahp/wire"

// Chat applies a to the chat state s.
func Chat(s *wire.ChatState, a wire.StateAction, clock Clock) {
	// TODO(reducer): not written yet.
}
