package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// The JSON-RPC 2.0 framing of AHP messages. The schemas leave it out (the
// TypeScript types keep it in types/common/messages.ts), so it is written by
// hand here, following those types: ids are numbers, params and results are
// kept as raw JSON to be decoded into the type the method calls for.

// JSONRPCVersion is the "jsonrpc" member of every message.
const JSONRPCVersion = "2.0"

// JsonRpcRequest is a request: it has both a method and an id.
type JsonRpcRequest struct {
	// JSONRPC is "2.0"; encoding fills it in when empty.
	JSONRPC string          `json:"jsonrpc"`
	ID      int64           `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

// JsonRpcNotification is a notification: it has a method but no id.
type JsonRpcNotification struct {
	// JSONRPC is "2.0"; encoding fills it in when empty.
	JSONRPC string          `json:"jsonrpc"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

// JsonRpcSuccessResponse is the response to a request that succeeded.
type JsonRpcSuccessResponse struct {
	// JSONRPC is "2.0"; encoding fills it in when empty.
	JSONRPC string `json:"jsonrpc"`
	ID      int64  `json:"id"`
	// Result is required; nil encodes as null (the result of ping and the
	// create/dispose commands).
	Result json.RawMessage `json:"result"`
}

// JsonRpcErrorResponse is the response to a request that failed.
type JsonRpcErrorResponse struct {
	// JSONRPC is "2.0"; encoding fills it in when empty.
	JSONRPC string `json:"jsonrpc"`
	// ID is nil, encoded as null, when the request's id could not be read
	// (JSON-RPC 2.0 §5); the TypeScript types only know numbers.
	ID    *int64       `json:"id"`
	Error JsonRpcError `json:"error"`
}

// JsonRpcError is the error object of an error response.
type JsonRpcError struct {
	// Code is a JSON-RPC code (CodeParseError, …) or an AHP one
	// (CodeSessionNotFound, …).
	Code    int64  `json:"code"`
	Message string `json:"message"`
	// Data is the code's detail payload (AuthRequiredErrorData, …), if any.
	Data json.RawMessage `json:"data,omitempty"`
}

// MarshalJSON encodes r with "jsonrpc" defaulted to "2.0".
func (r JsonRpcRequest) MarshalJSON() ([]byte, error) {
	type plain JsonRpcRequest
	v := plain(r)
	if v.JSONRPC == "" {
		v.JSONRPC = JSONRPCVersion
	}
	return json.Marshal(v)
}

// MarshalJSON encodes n with "jsonrpc" defaulted to "2.0".
func (n JsonRpcNotification) MarshalJSON() ([]byte, error) {
	type plain JsonRpcNotification
	v := plain(n)
	if v.JSONRPC == "" {
		v.JSONRPC = JSONRPCVersion
	}
	return json.Marshal(v)
}

// MarshalJSON encodes r with "jsonrpc" defaulted to "2.0".
func (r JsonRpcSuccessResponse) MarshalJSON() ([]byte, error) {
	type plain JsonRpcSuccessResponse
	v := plain(r)
	if v.JSONRPC == "" {
		v.JSONRPC = JSONRPCVersion
	}
	return json.Marshal(v)
}

// MarshalJSON encodes r with "jsonrpc" defaulted to "2.0".
func (r JsonRpcErrorResponse) MarshalJSON() ([]byte, error) {
	type plain JsonRpcErrorResponse
	v := plain(r)
	if v.JSONRPC == "" {
		v.JSONRPC = JSONRPCVersion
	}
	return json.Marshal(v)
}

// JsonRpcMessage is any AHP message (TypeScript ProtocolMessage). Value
// holds one of *JsonRpcRequest, *JsonRpcNotification,
// *JsonRpcSuccessResponse or *JsonRpcErrorResponse. JSON-RPC has no
// discriminator; decoding tells the kinds apart by which members are
// present: method and id make a request, method alone a notification, error
// an error response, result a success response.
type JsonRpcMessage struct {
	// Value is the message; see the type's documentation.
	Value any
}

// MarshalJSON encodes the held message.
func (m JsonRpcMessage) MarshalJSON() ([]byte, error) {
	switch x := m.Value.(type) {
	case *JsonRpcRequest, *JsonRpcNotification, *JsonRpcSuccessResponse, *JsonRpcErrorResponse,
		JsonRpcRequest, JsonRpcNotification, JsonRpcSuccessResponse, JsonRpcErrorResponse:
		return json.Marshal(x)
	}
	return nil, fmt.Errorf("wire: a JsonRpcMessage cannot hold a %T", m.Value)
}

// UnmarshalJSON decodes the kind of message b's members call for.
func (m *JsonRpcMessage) UnmarshalJSON(b []byte) error {
	if err := checkObject(b); err != nil {
		return fmt.Errorf("decoding JsonRpcMessage: %w", err)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(b, &members); err != nil {
		return fmt.Errorf("decoding JsonRpcMessage: %w", err)
	}
	_, hasID := members["id"]
	_, hasMethod := members["method"]
	_, hasError := members["error"]
	_, hasResult := members["result"]
	var v any
	switch {
	case hasMethod && hasID:
		v = new(JsonRpcRequest)
	case hasMethod:
		v = new(JsonRpcNotification)
	case hasError:
		v = new(JsonRpcErrorResponse)
	case hasResult:
		v = new(JsonRpcSuccessResponse)
	default:
		return fmt.Errorf("decoding JsonRpcMessage: neither a method, a result nor an error in %.60s", bytes.TrimSpace(b))
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decoding JsonRpcMessage as %T: %w", v, err)
	}
	m.Value = v
	return nil
}
