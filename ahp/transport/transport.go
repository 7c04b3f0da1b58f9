// Package transport defines the message-oriented connection contract that
// every AHP transport (WebSocket, stdio, in-memory pipes in tests) fulfils
// and that the host serves. It is a leaf package so transports need not
// import the host.
package transport

import (
	"context"
	"io"
)

// Conn is one bidirectional, ordered, reliable stream of complete JSON-RPC
// messages.
//
// ReadMessage is called from a single goroutine; WriteMessage from a single
// (other) goroutine; Close may be called from any goroutine, more than once,
// and must unblock a pending ReadMessage or WriteMessage.
type Conn interface {
	// ReadMessage returns the next complete message. Any error ends the
	// connection; io.EOF means the peer went away cleanly.
	ReadMessage() ([]byte, error)
	// WriteMessage sends one complete message.
	WriteMessage(msg []byte) error
	// Close tears the connection down.
	Close() error
}

// Server runs client connections; *host.Host implements it.
type Server interface {
	// ServeConn runs one connection until it ends or ctx is cancelled.
	ServeConn(ctx context.Context, c Conn) error
}

// StreamWriter is implemented by transports that can send one message
// produced piece by piece, so that a large message (a file being read for
// resourceRead) goes out as it is produced instead of being held whole in
// memory first. The host uses it when the transport offers it and falls
// back to WriteMessage otherwise.
//
// WriteMessageFrom calls write once with a writer for the message; the
// message ends when write returns. It is called from the same single
// goroutine as WriteMessage. The message must be compact JSON (no raw
// newline). If write fails, the message is cut short and the peer cannot
// make sense of the stream any more: the caller must close the
// connection.
type StreamWriter interface {
	WriteMessageFrom(write func(w io.Writer) error) error
}

// BatchWriter is implemented by transports that can send several complete
// messages with one write to the underlying stream, so that a connection's
// writer that finds frames already queued flushes them with one system call
// instead of one each. The host uses it when the transport offers it, only
// for frames that are already waiting (it never waits to fill a batch).
//
// WriteMessages sends msgs in order, as WriteMessage would send each; it is
// called from the same single goroutine as WriteMessage. If it fails, some
// of the messages may have been sent and the caller must close the
// connection.
type BatchWriter interface {
	WriteMessages(msgs [][]byte) error
}
