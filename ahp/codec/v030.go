package codec

import (
	"encoding/json"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// v030 serves AHP 0.3.0, whose sessions carry their turns themselves, as a
// projection of each session's default chat onto its session channel
// (docs/protocol-versions.md §3).
type v030 struct{ dir Directory }

func newV030(dir Directory) *v030 { return &v030{dir: dir} }

func (c *v030) Version() Version { return V030 }

func (c *v030) Channels(uri string) []string {
	if chat, ok := c.dir.DefaultChat(uri); ok {
		return []string{uri, chat}
	}
	return []string{uri}
}

func (c *v030) Snapshot(uri string, states []any) (json.RawMessage, error) {
	return nil, Errorf(wire.CodeInternalError, "the 0.3.0 projection of %s is not written yet", uri)
}

func (c *v030) Envelope(e Envelope) []Envelope { return nil }

func (c *v030) Notification(method string, params json.RawMessage) (json.RawMessage, bool) {
	return nil, false
}

func (c *v030) Action(channel string, action json.RawMessage) (string, json.RawMessage, error) {
	return channel, action, nil
}

func (c *v030) Request(method string, params json.RawMessage) (string, json.RawMessage, *Error) {
	return method, params, nil
}

func (c *v030) Result(method string, result json.RawMessage) (json.RawMessage, *Error) {
	return result, nil
}
