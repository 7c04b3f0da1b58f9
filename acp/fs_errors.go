package acp

import (
	"fmt"

	sdk "github.com/coder/acp-go-sdk"
)

// ACP error codes used by the file services.
const (
	codeInvalidParams    = -32602
	codeResourceNotFound = -32002
	codeInternal         = -32603
)

func fsError(code int, format string, args ...any) *sdk.RequestError {
	return &sdk.RequestError{Code: code, Message: fmt.Sprintf(format, args...)}
}
