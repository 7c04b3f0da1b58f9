package host

import (
	"crypto/rand"
	"fmt"

	"github.com/ahp-bridge/ahp-bridge/ahp/v030/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
)

// reduce applies a to ch's state with the package reducer. Called with
// ch.mu held. A reducer panic (a bug, or an action shape it cannot handle)
// is turned into an error so a bad action never takes the server down.
func (h *Host) reduce(ch *channel, a wire.StateAction) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the reducer failed: %v", r)
		}
	}()
	clock := reducer.Clock(h.opts.Clock)
	switch ch.kind {
	case chanRoot:
		reducer.Root(ch.root, a, clock)
	case chanSession:
		ch.stream.Session(ch.session, a, clock)
	case chanTerminal:
		reducer.Terminal(ch.terminal, a, clock)
	default:
		return fmt.Errorf("channel %s has no reducer", ch.uri)
	}
	return nil
}

// newRootState returns the initial root state.
func newRootState(agents []wire.AgentInfo) *wire.RootState {
	if agents == nil {
		agents = []wire.AgentInfo{}
	}
	return &wire.RootState{Agents: agents, ActiveSessions: wire.Ptr(0)}
}

// newUUID returns a random RFC 4122 version 4 UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
