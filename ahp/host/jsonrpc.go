package host

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// JSON-RPC 2.0 and AHP error codes used by the host (types/common/errors.ts).
const (
	CodeParseError                 = -32700
	CodeInvalidRequest             = -32600
	CodeMethodNotFound             = -32601
	CodeInvalidParams              = -32602
	CodeInternalError              = -32603
	CodeSessionNotFound            = -32001
	CodeProviderNotFound           = -32002
	CodeSessionAlreadyExists       = -32003
	CodeTurnInProgress             = -32004
	CodeUnsupportedProtocolVersion = -32005
	CodeContentNotFound            = -32006
	CodeAuthRequired               = -32007
	CodeNotFound                   = -32008
	CodePermissionDenied           = -32009
	CodeAlreadyExists              = -32010
	CodeConflict                   = -32011
)

// Error is a JSON-RPC error object. A Backend may return an *Error (possibly
// wrapped) from Completions or ResourceRead to choose the code the client
// sees, for example CodeNotFound; any other error becomes CodeInternalError.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// Error implements error.
func (e *Error) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// Errorf builds an *Error with a formatted message.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// asRPCError maps any error to the JSON-RPC error sent to the client.
func asRPCError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: CodeInternalError, Message: err.Error()}
}

// msgKind classifies an incoming frame.
type msgKind int

const (
	kindRequest      msgKind = iota // method + id: must be answered
	kindNotification                // method, no id: never answered
	kindResponse                    // id + result/error: an answer to a server request
)

// inMessage is a parsed incoming JSON-RPC message.
type inMessage struct {
	kind   msgKind
	id     json.RawMessage // verbatim id (number, string or null) for requests
	method string
	params json.RawMessage // verbatim params, nil when absent
}

// rawMessage is the loose shape every JSON-RPC message is decoded into
// before it is validated.
type rawMessage struct {
	JSONRPC *string         `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  json.RawMessage `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// parseFrame validates one frame. On failure it returns the error to send
// back and the id to send it with (null when the id could not be read).
// A nil *Error with a nil message never happens.
func parseFrame(frame []byte) (*inMessage, json.RawMessage, *Error) {
	trimmed := bytes.TrimLeft(frame, " \t\r\n")
	if !json.Valid(frame) {
		return nil, nil, &Error{Code: CodeParseError, Message: "parse error: the message is not valid JSON"}
	}
	if len(trimmed) > 0 && trimmed[0] == '[' {
		return nil, nil, &Error{Code: CodeInvalidRequest, Message: "invalid request: JSON-RPC batches (arrays) are not supported; send one message per frame"}
	}
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, nil, &Error{Code: CodeInvalidRequest, Message: "invalid request: a JSON-RPC message must be a JSON object"}
	}
	var raw rawMessage
	if err := json.Unmarshal(frame, &raw); err != nil {
		return nil, nil, &Error{Code: CodeInvalidRequest, Message: "invalid request: " + err.Error()}
	}
	id := raw.ID
	if id != nil && !validID(id) {
		return nil, nil, &Error{Code: CodeInvalidRequest, Message: "invalid request: id must be a string, a number or null"}
	}
	if raw.JSONRPC == nil || *raw.JSONRPC != "2.0" {
		return nil, id, &Error{Code: CodeInvalidRequest, Message: `invalid request: "jsonrpc" must be "2.0"`}
	}
	if raw.Method == nil {
		if id != nil && (raw.Result != nil || raw.Error != nil) {
			return &inMessage{kind: kindResponse, id: id}, id, nil
		}
		return nil, id, &Error{Code: CodeInvalidRequest, Message: `invalid request: "method" is missing`}
	}
	var method string
	if err := json.Unmarshal(raw.Method, &method); err != nil || method == "" {
		return nil, id, &Error{Code: CodeInvalidRequest, Message: `invalid request: "method" must be a non-empty string`}
	}
	m := &inMessage{kind: kindNotification, method: method, params: raw.Params}
	if id != nil {
		m.kind = kindRequest
		m.id = id
	}
	return m, id, nil
}

func validID(id json.RawMessage) bool {
	t := bytes.TrimSpace(id)
	if len(t) == 0 {
		return false
	}
	switch t[0] {
	case '"', 'n':
		return true
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return true
	}
	return false
}

// channelParam extracts params.channel, the routing key every AHP command
// and notification carries.
func channelParam(params json.RawMessage) (string, *Error) {
	if len(bytes.TrimSpace(params)) == 0 || bytes.Equal(bytes.TrimSpace(params), []byte("null")) {
		return "", &Error{Code: CodeInvalidParams, Message: `invalid params: "params" with a "channel" URI is required`}
	}
	var p struct {
		Channel *json.RawMessage `json:"channel"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return "", &Error{Code: CodeInvalidParams, Message: `invalid params: "params" must be an object: ` + err.Error()}
	}
	if p.Channel == nil {
		return "", &Error{Code: CodeInvalidParams, Message: `invalid params: "channel" is required`}
	}
	var ch string
	if err := json.Unmarshal(*p.Channel, &ch); err != nil || ch == "" {
		return "", &Error{Code: CodeInvalidParams, Message: `invalid params: "channel" must be a non-empty URI string`}
	}
	return canonicalChannel(ch), nil
}

// decodeParams unmarshals params into v, reporting type mismatches as
// InvalidParams with the offending field.
func decodeParams(method string, params json.RawMessage, v any) *Error {
	if err := json.Unmarshal(params, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return Errorf(CodeInvalidParams, "invalid params for %s: field %q must be %s, not %s", method, te.Field, te.Type.String(), te.Value)
		}
		return Errorf(CodeInvalidParams, "invalid params for %s: %v", method, err)
	}
	return nil
}

// rawResponse builds a success response around an already-encoded result.
func rawResponse(id json.RawMessage, result []byte) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	b := make([]byte, 0, len(result)+len(id)+40)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	b = append(b, result...)
	b = append(b, '}')
	return b
}

// encodeError builds an error response frame.
func encodeError(id json.RawMessage, e *Error) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	body, err := json.Marshal(e)
	if err != nil {
		// Data was not encodable; keep code and message, which always are.
		body, _ = json.Marshal(&Error{Code: e.Code, Message: e.Message})
	}
	b := make([]byte, 0, len(body)+len(id)+40)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"error":`...)
	b = append(b, body...)
	b = append(b, '}')
	return b
}

// encodeNotification builds a notification frame around encoded params.
func encodeNotification(method string, params []byte) []byte {
	b := make([]byte, 0, len(params)+len(method)+40)
	b = append(b, `{"jsonrpc":"2.0","method":`...)
	b = strconv.AppendQuote(b, method)
	b = append(b, `,"params":`...)
	b = append(b, params...)
	b = append(b, '}')
	return b
}
