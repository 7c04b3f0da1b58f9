package host

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ahp-bridge/ahp-bridge/ahp/codec"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// handleFrame processes one incoming frame. It never panics on bad input:
// every malformed request gets a JSON-RPC error and the connection stays
// open.
func (h *Host) handleFrame(ctx context.Context, c *conn, frame []byte) {
	defer func() {
		if r := recover(); r != nil {
			h.stats.panics.Add(1)
			c.log.Error().Interface("panic", r).Msg("internal error while handling a message")
			h.queue(c, encodeError(nil, &Error{Code: CodeInternalError, Message: fmt.Sprintf("internal error: %v", r)}))
		}
	}()
	m, id, perr := parseFrame(frame)
	if perr != nil {
		h.queue(c, encodeError(id, perr))
		return
	}
	switch m.kind {
	case kindResponse:
		// The host sends no requests; a stray response is ignored.
		c.log.Debug().RawJSON("id", m.id).Msg("ignoring a response to a request the server never sent")
	case kindNotification:
		h.handleNotification(c, m)
	default:
		h.handleRequest(ctx, c, m)
	}
}

func (h *Host) handleNotification(c *conn, m *inMessage) {
	if !c.isInitialized() {
		c.log.Debug().Str("method", m.method).Msg("dropping a notification sent before initialize")
		return
	}
	switch m.method {
	case "dispatchAction":
		h.dispatchAction(c, m.params)
	case "unsubscribe":
		uri, perr := channelParam(m.params)
		if perr != nil {
			c.log.Debug().Str("error", perr.Message).Msg("ignoring a malformed unsubscribe")
			return
		}
		h.unsubscribe(c, uri)
	default:
		c.log.Debug().Str("method", m.method).Msg("ignoring an unknown notification")
	}
}

// request is one request being answered: the connection, its id, and the
// method it became in the host's dialect (for translating the result).
type request struct {
	c      *conn
	id     json.RawMessage
	method string // the host's method (after the codec)
	params json.RawMessage
}

// commands are the requests this host answers, in the host's dialect, by
// what serves them. Handshake requests (initialize, reconnect, ping) are
// handled before the table. Methods a codec may route to (codec.Internal*)
// are only reachable through a codec.
var commands = map[string]func(h *Host, ctx context.Context, r *request, channel string){
	"subscribe":                  (*Host).subscribe,
	"authenticate":               (*Host).authenticate,
	"createSession":              (*Host).createSession,
	"disposeSession":             (*Host).disposeSession,
	"createChat":                 (*Host).createChat,
	"disposeChat":                (*Host).disposeChat,
	"listSessions":               (*Host).listSessions,
	"fetchTurns":                 (*Host).fetchTurns,
	"completions":                (*Host).completions,
	"resourceRead":               (*Host).resourceRead,
	"resourceList":               (*Host).resourceList,
	"resourceWrite":              (*Host).resourceWrite,
	"resourceResolve":            (*Host).resourceResolve,
	"resourceMkdir":              (*Host).resourceMkdir,
	"resourceDelete":             (*Host).resourceDelete,
	"resourceMove":               (*Host).resourceMove,
	"resourceCopy":               (*Host).resourceCopy,
	"createResourceWatch":        (*Host).createResourceWatch,
	"resolveSessionConfig":       (*Host).resolveSessionConfig,
	"sessionConfigCompletions":   (*Host).sessionConfigCompletions,
	codec.InternalFetchTurnsPage: (*Host).fetchTurnsPage,

	wire.MethodMoveChat:                         (*Host).moveChat,
	wire.MethodListAutomationTriggerDefinitions: (*Host).listAutomationTriggerDefinitions,
}

// unsupported are AHP commands this host knows but has nothing behind; they
// are answered at once, naming why, instead of "method not found".
var unsupported = map[string]string{
	"createTerminal":               "this server does not create terminals for clients; agents' terminals are mirrored read-only",
	"disposeTerminal":              "this server does not create terminals for clients",
	"invokeChangesetOperation":     "this server advertises no changeset operations",
	"resourceRequest":              "this server does not grant resource access beyond the working directories of the sessions a connection created or is subscribed to",
	wire.MethodRunAutomation:       "this server has no automations (its agents offer none)",
	wire.MethodFetchAutomationRuns: "this server has no automations (its agents offer none)",
}

// notificationMethods are the client notifications this host implements.
var notificationMethods = map[string]bool{"dispatchAction": true, "unsubscribe": true}

// changesSession are the requests on a session that need it driven here:
// on one another live bridge drives (mirror.go) they are refused naming
// that bridge, or, when it is gone, this bridge takes the session over.
var changesSession = map[string]bool{
	"disposeSession": true, "createChat": true, "disposeChat": true, "completions": true,
	"resolveSessionConfig": true, "sessionConfigCompletions": true,
}

func (h *Host) handleRequest(ctx context.Context, c *conn, m *inMessage) {
	switch m.method {
	case "ping":
		// Answered whatever the params and the handshake (spec: ping).
		h.queue(c, rawResponse(m.id, []byte("null")))
		return
	case "initialize":
		h.initialize(c, m)
		return
	case "reconnect":
		h.reconnect(c, m)
		return
	}
	if notificationMethods[m.method] {
		// dispatchAction and unsubscribe are notifications in AHP; a client
		// that sends them as requests still gets them done, and an empty
		// answer so it is not left waiting.
		h.handleNotification(c, m)
		h.queue(c, rawResponse(m.id, []byte("null")))
		return
	}
	if why, ok := unsupported[m.method]; ok {
		h.queue(c, encodeError(m.id, Errorf(CodeMethodNotFound, "%s is not supported: %s", m.method, why)))
		return
	}
	if _, ok := commands[m.method]; !ok || m.method == codec.InternalFetchTurnsPage {
		h.queue(c, encodeError(m.id, Errorf(CodeMethodNotFound, "method not found: %s is not supported by this server", m.method)))
		return
	}
	// A method this server never serves is not found, handshake or not;
	// one it serves needs the handshake first.
	if !c.isInitialized() {
		h.queue(c, encodeError(m.id, Errorf(CodeInvalidRequest, "the connection is not initialized: send initialize (or reconnect) before %s", m.method)))
		return
	}
	r := &request{c: c, id: m.id, method: m.method, params: m.params}
	// A stored session comes back the first time a request names it,
	// before a codec looks up its chats; so does an agent's own session
	// become the host's (external.go).
	if uri, perr := channelParam(m.params); perr == nil {
		h.restore(uri)
		if changesSession[m.method] {
			if reason := h.mayChange(uri); reason != "" { // mirror.go: a session another bridge drives
				h.queue(c, encodeError(m.id, Errorf(CodeInvalidRequest, "%s", reason)))
				return
			}
		}
	}
	if cd := c.codec; cd != nil {
		method, params, cerr := cd.Request(m.method, m.params)
		if cerr != nil {
			h.queue(c, encodeError(m.id, fromCodec(cerr)))
			return
		}
		r.method, r.params = method, params
	}
	serve, ok := commands[r.method]
	if !ok {
		h.queue(c, encodeError(m.id, Errorf(CodeMethodNotFound, "method not found: %s is not supported by this server", m.method)))
		return
	}
	channel, perr := channelParam(r.params)
	if perr != nil {
		h.reply(r, nil, perr)
		return
	}
	serve(h, ctx, r, channel)
}

// reply answers a request with result (encoded as JSON) or err, translating
// the result into the connection's dialect.
func (h *Host) reply(r *request, result any, err *Error) {
	if err != nil {
		h.queue(r.c, encodeError(r.id, err))
		return
	}
	h.queue(r.c, h.resultFrame(r, result))
}

// resultFrame encodes a request's result in the connection's dialect.
func (h *Host) resultFrame(r *request, result any) []byte {
	body, merr := json.Marshal(result)
	if merr != nil {
		return encodeError(r.id, &Error{Code: CodeInternalError, Message: "encoding the result: " + merr.Error()})
	}
	if cd := r.c.codec; cd != nil {
		out, cerr := cd.Result(r.method, body)
		if cerr != nil {
			return encodeError(r.id, fromCodec(cerr))
		}
		body = out
	}
	return rawResponse(r.id, body)
}

// fromCodec turns a codec's error into the host's.
func fromCodec(e *codec.Error) *Error {
	return &Error{Code: e.Code, Message: e.Message, Data: e.Data}
}
