package client

import (
	"github.com/ahp-bridge/ahp-bridge/ahp/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// reduce applies one confirmed action to a channel's state with the
// protocol's reducers, the same ones the host runs. The reducers ignore
// actions they do not handle, so an unknown action leaves the state as is.
func (c *Client) reduce(cs *channelState, action wire.StateAction) {
	switch cs.kind {
	case kindSession:
		reducer.Session(cs.session, action, c.clock)
	case kindChat:
		cs.stream.Chat(cs.chat, action, c.clock)
	case kindRoot:
		reducer.Root(cs.root, action, c.clock)
	}
}

// clock is the reducers' clock: Options.Now in Unix milliseconds.
func (c *Client) clock() int64 { return c.opts.Now().UnixMilli() }
