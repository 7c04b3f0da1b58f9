package codec

import (
	"encoding/json"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// chatFamily serves the chat-channel dialects older than Current (0.6.0 and
// the 0.5 family): same channels and state model, minus what each version
// does not know.
type chatFamily struct {
	v   Version
	dir Directory
}

func newChatFamily(v Version, dir Directory) *chatFamily { return &chatFamily{v: v, dir: dir} }

func (c *chatFamily) Version() Version { return c.v }

func (c *chatFamily) Channels(uri string) []string { return []string{uri} }

func (c *chatFamily) Snapshot(uri string, states []any) (json.RawMessage, error) {
	if len(states) != 1 {
		return nil, Errorf(wire.CodeInternalError, "a %s snapshot of %s needs one state, got %d", c.v, uri, len(states))
	}
	return json.Marshal(states[0])
}

func (c *chatFamily) Envelope(e Envelope) []Envelope {
	if !ActionKnownTo(actionType(e.Action), c.v) {
		return nil
	}
	return []Envelope{e}
}

func (c *chatFamily) Notification(method string, params json.RawMessage) (json.RawMessage, bool) {
	return params, NotificationKnownTo(method, c.v)
}

func (c *chatFamily) Action(channel string, action json.RawMessage) (string, json.RawMessage, error) {
	return channel, action, nil
}

func (c *chatFamily) Request(method string, params json.RawMessage) (string, json.RawMessage, *Error) {
	return method, params, nil
}

func (c *chatFamily) Result(method string, result json.RawMessage) (json.RawMessage, *Error) {
	return result, nil
}

// actionType reads the "type" member of an encoded action.
func actionType(action json.RawMessage) string {
	var t struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(action, &t)
	return t.Type
}
