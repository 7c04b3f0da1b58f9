// Package stdio carries AHP JSON-RPC messages over a byte stream, one
// message per line (newline-delimited JSON), for example a process's stdin
// and stdout. It implements the host.Conn contract without importing the
// host, so it can equally be used by clients and tests.
package stdio

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/ahp-bridge/ahp-bridge/ahp/transport"
	"io"
	"sync"
)

// DefaultMaxMessageSize is the largest line accepted when Options does not
// say otherwise (4 MiB, the same default as the WebSocket transport).
const DefaultMaxMessageSize = 4 << 20

// ErrMessageTooLarge is returned by ReadMessage when a line exceeds the
// configured maximum size. The stream cannot be resynchronised safely after
// that, so the connection should be closed.
var ErrMessageTooLarge = errors.New("stdio: message exceeds the maximum size")

// ErrClosed is returned by ReadMessage and WriteMessage after Close.
var ErrClosed = errors.New("stdio: connection closed")

// Options tunes a Conn. The zero value is usable.
type Options struct {
	// MaxMessageSize is the largest accepted line in bytes, excluding the
	// newline. Zero means DefaultMaxMessageSize.
	MaxMessageSize int
}

// Conn is one AHP connection over a reader and a writer. ReadMessage must be
// called from one goroutine at a time; WriteMessage and Close may be called
// from any goroutine.
type Conn struct {
	r   *bufio.Reader
	max int

	wmu sync.Mutex
	w   io.Writer

	closers   []io.Closer
	closeOnce sync.Once
	closed    chan struct{}
}

// New returns a Conn reading lines from r and writing lines to w. If r or w
// implement io.Closer they are closed by Close, which is what unblocks a
// pending ReadMessage.
func New(r io.Reader, w io.Writer, opts Options) *Conn {
	max := opts.MaxMessageSize
	if max <= 0 {
		max = DefaultMaxMessageSize
	}
	c := &Conn{
		r:      bufio.NewReaderSize(r, 64<<10),
		max:    max,
		w:      w,
		closed: make(chan struct{}),
	}
	if rc, ok := r.(io.Closer); ok {
		c.closers = append(c.closers, rc)
	}
	if wc, ok := w.(io.Closer); ok {
		c.closers = append(c.closers, wc)
	}
	return c
}

// ReadMessage returns the next non-empty line without its line ending.
// It returns io.EOF when the input ends cleanly.
func (c *Conn) ReadMessage() ([]byte, error) {
	for {
		line, err := c.readLine()
		if err != nil {
			select {
			case <-c.closed:
				return nil, ErrClosed
			default:
			}
			if len(line) > 0 && errors.Is(err, io.EOF) {
				// A final message without a trailing newline is still a message.
				return line, nil
			}
			return nil, err
		}
		line = bytes.TrimRight(line, "\r")
		if len(bytes.TrimSpace(line)) == 0 {
			continue // blank lines carry nothing; tolerate them
		}
		return line, nil
	}
}

// readLine reads up to and excluding '\n', enforcing the size limit without
// buffering more than the limit.
func (c *Conn) readLine() ([]byte, error) {
	var buf []byte
	for {
		frag, err := c.r.ReadSlice('\n')
		if len(buf)+len(frag) > c.max+1 { // +1 for the newline itself
			// Skip the rest of the oversized line so the error is reported
			// once, then give up: the caller closes the connection.
			return nil, fmt.Errorf("%w (limit %d bytes)", ErrMessageTooLarge, c.max)
		}
		buf = append(buf, frag...)
		switch {
		case err == nil:
			return buf[:len(buf)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return buf, err
		}
	}
}

// WriteMessage writes msg followed by a newline. A message containing raw
// newlines (possible only for hand-built, indented JSON) is compacted first
// so the framing stays intact.
func (c *Conn) WriteMessage(msg []byte) error {
	select {
	case <-c.closed:
		return ErrClosed
	default:
	}
	if bytes.IndexByte(msg, '\n') >= 0 {
		var b bytes.Buffer
		if err := json.Compact(&b, msg); err != nil {
			return fmt.Errorf("stdio: refusing to write a message with a raw newline that is not JSON: %w", err)
		}
		msg = b.Bytes()
	}
	out := make([]byte, 0, len(msg)+1)
	out = append(out, msg...)
	out = append(out, '\n')
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.w.Write(out); err != nil {
		return fmt.Errorf("stdio: write: %w", err)
	}
	return nil
}

// WriteMessages writes msgs as consecutive lines with one write
// (transport.BatchWriter).
func (c *Conn) WriteMessages(msgs [][]byte) error {
	select {
	case <-c.closed:
		return ErrClosed
	default:
	}
	n := 0
	for _, m := range msgs {
		n += len(m) + 1
	}
	out := make([]byte, 0, n)
	for _, msg := range msgs {
		if bytes.IndexByte(msg, '\n') >= 0 {
			var b bytes.Buffer
			if err := json.Compact(&b, msg); err != nil {
				return fmt.Errorf("stdio: refusing to write a message with a raw newline that is not JSON: %w", err)
			}
			msg = b.Bytes()
		}
		out = append(append(out, msg...), '\n')
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.w.Write(out); err != nil {
		return fmt.Errorf("stdio: write: %w", err)
	}
	return nil
}

// WriteMessageFrom writes the message write produces, then a newline
// (transport.StreamWriter). A raw newline in it would split the message
// in two, so it fails the write instead.
func (c *Conn) WriteMessageFrom(write func(w io.Writer) error) error {
	select {
	case <-c.closed:
		return ErrClosed
	default:
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := write(lineWriter{c.w}); err != nil {
		return err
	}
	if _, err := c.w.Write([]byte{'\n'}); err != nil {
		return fmt.Errorf("stdio: write: %w", err)
	}
	return nil
}

// lineWriter passes bytes on as long as they hold no newline.
type lineWriter struct{ w io.Writer }

func (l lineWriter) Write(p []byte) (int, error) {
	if bytes.IndexByte(p, '\n') >= 0 {
		return 0, errors.New("stdio: refusing to write a streamed message with a raw newline")
	}
	n, err := l.w.Write(p)
	if err != nil {
		return n, fmt.Errorf("stdio: write: %w", err)
	}
	return n, nil
}

// Close closes the underlying reader and writer (when they can be closed).
// It is safe to call more than once and concurrently with reads and writes.
func (c *Conn) Close() error {
	var errs []error
	c.closeOnce.Do(func() {
		close(c.closed)
		for _, cl := range c.closers {
			if err := cl.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	})
	return errors.Join(errs...)
}

// Conn satisfies the transport contract.
var (
	_ transport.Conn         = (*Conn)(nil)
	_ transport.StreamWriter = (*Conn)(nil)
	_ transport.BatchWriter  = (*Conn)(nil)
)
