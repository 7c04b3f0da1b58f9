package sandbox

import (
	"errors"
	"fmt"
)

// Kind classifies a refusal or failure so that a protocol front end can
// map it to its own error code without parsing messages. A Kind is itself
// an error, so errors.Is(err, sandbox.ErrNotFound) works on any error the
// package returns.
type Kind uint8

// The kinds of error a Sandbox returns. The comments give the AHP 0.7.0
// code each is meant to become.
const (
	// ErrInvalid: the request itself is wrong (empty path, NUL byte, a
	// directory where a file is needed, a device file, a bad offset).
	// JSON-RPC InvalidParams (-32602).
	ErrInvalid Kind = iota + 1
	// ErrNotFound: the path, or the directory it should be created in,
	// does not exist. AHP NotFound (-32008).
	ErrNotFound
	// ErrPermissionDenied: the operation is not allowed here, e.g. any
	// write in read-only mode, or deleting a root. AHP PermissionDenied
	// (-32009).
	ErrPermissionDenied
	// ErrAlreadyExists: the target exists and the caller asked not to
	// replace it. AHP AlreadyExists (-32010).
	ErrAlreadyExists
	// ErrConflict: the file changed since the caller read its ETag. AHP
	// Conflict (-32011).
	ErrConflict
	// ErrOutside: the path, or a symbolic link on its way, leads outside
	// every root. It is returned whether or not the outside path exists,
	// so a refusal reveals nothing. AHP PermissionDenied (-32009).
	ErrOutside
	// ErrIO: the file system failed in a way none of the kinds above
	// describe. JSON-RPC InternalError (-32603).
	ErrIO
)

// Error implements error.
func (k Kind) Error() string {
	switch k {
	case ErrInvalid:
		return "invalid request"
	case ErrNotFound:
		return "not found"
	case ErrPermissionDenied:
		return "permission denied"
	case ErrAlreadyExists:
		return "already exists"
	case ErrConflict:
		return "changed since it was read"
	case ErrOutside:
		return "outside the directories this sandbox serves"
	case ErrIO:
		return "file system error"
	}
	return fmt.Sprintf("sandbox error kind %d", uint8(k))
}

// Error is what every Sandbox method returns on failure.
type Error struct {
	// Op is the operation, e.g. "read" or "write".
	Op string
	// Path is the path as the caller gave it, so the message names what
	// the caller asked for, not what a symbolic link made of it.
	Path string
	// Kind classifies the error.
	Kind Kind
	// Msg says what went wrong in words for the log; it may be empty.
	Msg string
	// Err is the underlying error, if any. It is nil for ErrOutside so
	// that nothing about the outside path leaks through it.
	Err error
}

// Error implements error.
func (e *Error) Error() string {
	msg := e.Msg
	if msg == "" {
		msg = e.Kind.Error()
	}
	s := fmt.Sprintf("%s %q: %s", e.Op, e.Path, msg)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap exposes both the kind and the underlying error to errors.Is and
// errors.As.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// KindOf returns the kind of err, or 0 if err did not come from a
// Sandbox.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	var k Kind
	if errors.As(err, &k) {
		return k
	}
	return 0
}

func newErr(op, path string, kind Kind, format string, args ...any) *Error {
	return &Error{Op: op, Path: path, Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

func outside(op, path string) *Error {
	return &Error{Op: op, Path: path, Kind: ErrOutside}
}
