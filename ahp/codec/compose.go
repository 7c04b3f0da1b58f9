package codec

import "encoding/json"

// composed serves a dialect older than 0.7.0 in two stages: the 0.7.0 codec
// (top) takes the host's 1.0.0 traffic down to 0.7.0, and the dialect's own
// codec (old: chatFamily or v030, which translate from 0.7.0 and were
// written when 0.7.0 was the host's) takes it the rest of the way. Inbound
// the order reverses: old up to 0.7.0, then top up to 1.0.0. So the older
// dialects see exactly what a 0.7.0 client sees, less what their own rules
// drop (docs/protocol-versions.md §11, last column).
type composed struct {
	top *downgrade
	// old is a 0.7.0-facing Codec: its Snapshot takes the ahp/v070/wire
	// states of top.states070, and its actions, requests and results are
	// 0.7.0 JSON.
	old Codec
}

func compose(top *downgrade, old Codec) *composed { return &composed{top: top, old: old} }

func (c *composed) Version() Version { return c.old.Version() }

// Channels is the older codec's: the 0.7.0 codec names every channel as the
// host does.
func (c *composed) Channels(uri string) []string { return c.old.Channels(uri) }

func (c *composed) Snapshot(uri string, states []any) (json.RawMessage, error) {
	s070, err := c.top.states070(uri, states)
	if err != nil {
		return nil, err
	}
	return c.old.Snapshot(uri, s070)
}

// Envelope flat-maps: each 0.7.0 envelope top makes goes through old. The
// common case, an action that 0.7.0 has as 1.0.0 has it, is handed to old
// as it is, so that a pass-through costs what old's costs.
func (c *composed) Envelope(e Envelope) []Envelope {
	mid, same := c.top.down(e)
	if same {
		return c.old.Envelope(e)
	}
	var out []Envelope
	for _, m := range mid {
		out = append(out, c.old.Envelope(m)...)
	}
	return out
}

func (c *composed) Notification(method string, params json.RawMessage) (json.RawMessage, bool) {
	p, ok := c.top.Notification(method, params)
	if !ok {
		return nil, false
	}
	return c.old.Notification(method, p)
}

func (c *composed) Action(channel string, action json.RawMessage) (string, json.RawMessage, error) {
	ch, a, err := c.old.Action(channel, action)
	if err != nil {
		return "", nil, err
	}
	return c.top.Action(ch, a)
}

func (c *composed) Request(method string, params json.RawMessage) (string, json.RawMessage, *Error) {
	m, p, err := c.old.Request(method, params)
	if err != nil {
		return "", nil, err
	}
	return c.top.Request(m, p)
}

// Result reverses Request. top never renames a method, so the host's
// method is the one old routed to.
func (c *composed) Result(method string, result json.RawMessage) (json.RawMessage, *Error) {
	r, err := c.top.Result(method, result)
	if err != nil {
		return nil, err
	}
	return c.old.Result(method, r)
}
