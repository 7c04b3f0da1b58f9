package client

import (
	"github.com/ahp-bridge/ahp-bridge/ahp/v030/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
)

// reduce applies one confirmed action to a channel's state with the
// protocol's reducers, the same ones the host runs. The reducers ignore
// actions they do not handle, so an unknown action leaves the state as is.
func (c *Client) reduce(cs *channelState, action wire.StateAction) {
	clock := func() int64 { return c.opts.Now().UnixMilli() }
	switch {
	case cs.session != nil:
		cs.stream.Session(cs.session, action, clock)
	case cs.root != nil:
		reducer.Root(cs.root, action, clock)
	}
}
