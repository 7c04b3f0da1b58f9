package host

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/ahp-bridge/ahp-bridge/ahp/transport"
)

// streamOut is a response whose body is too large to hold in memory: the
// result of resourceRead for a file. It is queued like any frame, but its
// bytes are produced only when the writer gets to it, straight from the
// file to the transport (transport.StreamWriter), so a file of any size
// costs the bridge a few fixed buffers.
//
// The request it answers stays pending (Options.MaxPendingRequests) until
// it has been written or dropped, which bounds the files one connection
// holds open.
type streamOut struct {
	// head and tail are the JSON around the streamed part.
	head, tail []byte
	// body writes the streamed part to w and returns how many bytes it
	// wrote.
	body func(w io.Writer) (int64, error)
	// release frees what body reads from (closes the file) and ends the
	// request. It is called exactly once, written or not.
	release  func()
	released sync.Once
}

// writeTo writes the whole message to w.
func (s *streamOut) writeTo(w io.Writer) (int64, error) {
	n, err := w.Write(s.head)
	total := int64(n)
	if err != nil {
		return total, err
	}
	m, err := s.body(w)
	total += m
	if err != nil {
		return total, err
	}
	n, err = w.Write(s.tail)
	return total + int64(n), err
}

func (s *streamOut) finish() { s.released.Do(s.release) }

// responseHead is the start of a response frame up to where its result
// begins.
func responseHead(id []byte) []byte {
	if id == nil {
		id = []byte("null")
	}
	b := make([]byte, 0, len(id)+40)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	return append(b, `,"result":`...)
}

// streamSet holds a connection's streamed responses that are queued but
// not yet written, so that those the writer never reaches (the connection
// ended) are still released.
type streamSet struct {
	mu     sync.Mutex
	open   map[*streamOut]struct{}
	closed bool
}

// add registers s; false means the connection has ended and s must be
// released at once.
func (ss *streamSet) add(s *streamOut) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.closed {
		return false
	}
	if ss.open == nil {
		ss.open = make(map[*streamOut]struct{})
	}
	ss.open[s] = struct{}{}
	return true
}

// done forgets s and releases it.
func (ss *streamSet) done(s *streamOut) {
	ss.mu.Lock()
	delete(ss.open, s)
	ss.mu.Unlock()
	s.finish()
}

// close releases every stream still registered and refuses new ones.
func (ss *streamSet) close() {
	ss.mu.Lock()
	ss.closed = true
	open := ss.open
	ss.open = nil
	ss.mu.Unlock()
	for s := range open {
		s.finish()
	}
}

// sendStream queues a streamed response. Like send, it never blocks.
func (c *conn) sendStream(s *streamOut) {
	if !c.streams.add(s) {
		s.finish()
		return
	}
	c.qmu.Lock()
	defer c.qmu.Unlock()
	if c.dead {
		return // the connection is ending; ServeConn's closeStreams releases s
	}
	// Straight to the queue even while holding (see hold): a response
	// needs no ordering against the actions a subscription is waiting
	// for, and held frames are kept as bytes.
	c.pushLocked(outFrame{stream: s})
	c.h.stats.queued.Add(1)
}

// writeStream writes a streamed response from the connection's writer.
// It reports false when the connection has to end: the transport failed,
// or the source did, which leaves a message cut short that the peer
// cannot make sense of.
func (c *conn) writeStream(s *streamOut) bool {
	defer c.streams.done(s)
	var n int64
	var srcErr error
	produce := func(w io.Writer) error {
		rw := &recordingWriter{w: w}
		var err error
		n, err = s.writeTo(rw)
		if err != nil && rw.err == nil {
			srcErr = err
		}
		return err
	}
	var err error
	if sw, ok := c.tc.(transport.StreamWriter); ok {
		err = sw.WriteMessageFrom(produce)
	} else {
		// A transport that can only write whole messages (in-memory pipes)
		// gets one.
		var buf bytes.Buffer
		if err = produce(&buf); err == nil {
			err = c.tc.WriteMessage(buf.Bytes())
		}
	}
	if c.h.opts.WireLog != nil {
		summary := make([]byte, 0, len(s.head)+len(s.tail)+40)
		summary = append(summary, s.head...)
		summary = strconv.AppendQuote(summary, fmt.Sprintf("<%d bytes streamed>", n))
		summary = append(summary, s.tail...)
		c.h.wireLog("out", summary)
	}
	switch {
	case srcErr != nil:
		c.log.Error().Err(srcErr).Msg("reading the content of a streamed response failed midway; closing the connection")
		c.terminate("reading the content of a response failed midway, so the response is cut short: " + srcErr.Error())
		return false
	case err != nil:
		c.writeFailed(err)
		return false
	}
	c.h.ops.framesWritten.Add(1)
	c.h.ops.bytesWritten.Add(n)
	return true
}

// recordingWriter keeps the first error of the writer below it, which
// tells the transport's failures apart from the source's.
type recordingWriter struct {
	w   io.Writer
	err error
}

func (r *recordingWriter) Write(p []byte) (int, error) {
	n, err := r.w.Write(p)
	if err != nil && r.err == nil {
		r.err = err
	}
	return n, err
}

// closeStreams releases the streamed responses the writer never got to.
// ServeConn calls it once the writer has stopped.
func (c *conn) closeStreams() { c.streams.close() }

// asyncStream answers a request whose result is streamed. open runs in a
// goroutine of its own, admitted like async's; the request stays pending
// until the stream has been written or dropped.
func (h *Host) asyncStream(r *request, open func() (*streamOut, *Error)) {
	c := r.c
	if !h.admit(r) {
		return
	}
	go func() {
		handedOff := false
		defer func() {
			if p := recover(); p != nil {
				c.log.Error().Interface("panic", p).Str("method", r.method).Msg("internal error while preparing a streamed response")
				h.reply(r, nil, Errorf(CodeInternalError, "internal error in %s", r.method))
			}
			if !handedOff {
				c.endRequest()
			}
		}()
		s, err := open()
		if err != nil {
			h.reply(r, nil, err)
			return
		}
		release := s.release
		s.release = func() {
			if release != nil {
				release()
			}
			c.endRequest()
		}
		handedOff = true
		c.sendStream(s)
	}()
}
