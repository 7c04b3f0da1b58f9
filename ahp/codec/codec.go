package codec

import (
	"encoding/json"
	"fmt"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// Codec translates the traffic of connections that negotiated one protocol
// version, between that version's dialect and the host's current one.
//
// A Codec holds no per-connection state and is safe for concurrent use: one
// value serves every connection speaking its version, and the host
// translates each broadcast envelope once per codec, not once per
// connection. The host never consults a codec for connections speaking
// Current (they get the host's own bytes).
//
// The host's dialect is Current, AHP 1.0.0: its states are the types of
// ahp/wire, and every action, request and result a codec receives from the
// host or hands to it is 1.0.0 JSON.
type Codec interface {
	// Version is the protocol version the codec speaks.
	Version() Version

	// Channels returns the host channels that a subscription to uri means in
	// this dialect, or nil when the dialect cannot name uri. For a chat
	// dialect this is uri itself; for 0.3.0 a session URI means the session
	// and its default chat. The host subscribes the connection to all of
	// them at once.
	Channels(uri string) []string

	// Snapshot builds this dialect's snapshot state of uri from the host's
	// states of Channels(uri), in the same order: pointers to the 1.0.0
	// types of ahp/wire (wire.RootState, wire.SessionState, wire.ChatState,
	// wire.TerminalState, …). When the first is a session, the session's
	// root-catalogue entry (*wire.SessionSummary) follows them, for
	// dialects whose session state carries its summary. The host calls it
	// under the channels' locks; the codec must not keep the states or
	// anything inside them.
	Snapshot(uri string, states []any) (json.RawMessage, error)

	// Envelope translates one sequenced envelope into the envelopes this
	// dialect receives for it: usually one, none when the version does not
	// know the action, several when one action becomes several in this
	// dialect (they share the original serverSeq, and only the first keeps
	// the origin: it is the echo a sender reconciles with).
	Envelope(e Envelope) []Envelope

	// Notification translates the params of a protocol notification (not
	// `action`); ok is false when the version must not receive it.
	Notification(method string, params json.RawMessage) (out json.RawMessage, ok bool)

	// Action translates an action a client of this dialect dispatched on
	// channel into the host's dialect. An error rejects the action; its
	// text is the rejection reason the client sees.
	Action(channel string, action json.RawMessage) (hostChannel string, hostAction json.RawMessage, err error)

	// Request translates a request of this dialect into the host's: the
	// method may change (for example to an Internal* method that serves an
	// older shape of the same command), and so may its params. A *Error
	// answers the request instead.
	Request(method string, params json.RawMessage) (hostMethod string, hostParams json.RawMessage, err *Error)

	// Result translates the result of hostMethod (as returned by Request)
	// back into this dialect.
	Result(hostMethod string, result json.RawMessage) (json.RawMessage, *Error)
}

// Envelope is an action envelope: the action is encoded, in the dialect of
// whoever holds the Envelope. The origin has the same JSON in every
// dialect, so it is always the host's type.
type Envelope struct {
	Channel   string
	Action    json.RawMessage
	ServerSeq int64
	Origin    *wire.ActionOrigin
}

// Directory answers what a projection needs to know about the host's
// channels. Implementations must be safe for concurrent use and must not
// take locks the host holds while sequencing (the host calls codecs from
// inside its sequencer).
type Directory interface {
	// DefaultChat returns the default chat of a session.
	DefaultChat(session string) (chat string, ok bool)
	// SessionOfDefaultChat returns the session whose default chat this is.
	SessionOfDefaultChat(chat string) (session string, ok bool)
}

// Methods the host serves only to codecs: older shapes of a command that a
// codec routes a client's request to. The host refuses them from the wire.
const (
	// InternalFetchTurnsPage answers the pre-0.5.1 fetchTurns: params
	// {channel: chat URI, before?: turn id, limit?: n}, result
	// {turns: wire.Turn[] (1.0.0) oldest first, hasMore: bool}, served from
	// the chat's retained history without dispatching chat/turnsLoaded.
	InternalFetchTurnsPage = "ahp-bridge/fetchTurnsPage"
)

// Error is a JSON-RPC error a codec answers a request with.
type Error struct {
	Code    int
	Message string
	Data    any
}

func (e *Error) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// Errorf returns an *Error with a formatted message.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// For returns the codec of a negotiated dialect, or nil for Current (whose
// connections need no translation) and for versions this bridge does not
// speak. A version inside a caret range (1.1.0, 0.9.3) means its baseline's
// dialect, so passing the offer Negotiate chose instead of its dialect is
// harmless. dir lets projections find their way between sessions and chats.
//
// 0.9.0 and 0.7.0 are translated from 1.0.0 directly. The older dialects
// are their own codecs, which translate from 0.7.0, applied to the 0.7.0
// codec's output (compose.go).
func For(v Version, dir Directory) Codec {
	d, ok := DialectOf(v)
	switch {
	case !ok || d == Current:
		return nil
	case d == V090:
		return newV090()
	case d == V070:
		return newV070(dir)
	case d == V030:
		return compose(newV070(dir), newV030(dir))
	}
	return compose(newV070(dir), newChatFamily(d, dir))
}
