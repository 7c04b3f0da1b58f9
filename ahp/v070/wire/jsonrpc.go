package wire

import "github.com/ahp-bridge/ahp-bridge/ahp/wire"

// The JSON-RPC 2.0 framing did not change between 0.7.0 and 1.0.0 (both
// follow types/common/messages.ts), so 0.7.0 uses the host's types; these
// aliases let the 0.7.0 round-trip fixtures check them under 0.7.0 names.

// JSONRPCVersion is the "jsonrpc" member of every message.
const JSONRPCVersion = wire.JSONRPCVersion

type (
	// JsonRpcRequest is a request: it has both a method and an id.
	JsonRpcRequest = wire.JsonRpcRequest
	// JsonRpcNotification is a notification: it has a method but no id.
	JsonRpcNotification = wire.JsonRpcNotification
	// JsonRpcSuccessResponse is the response to a request that succeeded.
	JsonRpcSuccessResponse = wire.JsonRpcSuccessResponse
	// JsonRpcErrorResponse is the response to a request that failed.
	JsonRpcErrorResponse = wire.JsonRpcErrorResponse
	// JsonRpcError is the error of a JsonRpcErrorResponse.
	JsonRpcError = wire.JsonRpcError
	// JsonRpcMessage is any one of the four kinds of message.
	JsonRpcMessage = wire.JsonRpcMessage
)
