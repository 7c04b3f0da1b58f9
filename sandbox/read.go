//go:build unix

package sandbox

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"os"
	"syscall"
	"unicode/utf8"
)

// Encoding is how Read presents a file's bytes. The values are AHP's
// ContentEncoding strings.
type Encoding string

// The encodings Read offers.
const (
	// EncodingAuto lets Read choose: UTF-8 for text, base64 otherwise.
	EncodingAuto Encoding = ""
	// EncodingUTF8 asks for the text itself. A file that does not look
	// like text is still sent as base64, as AHP requires for binary
	// content; Content.Encoding says which was used.
	EncodingUTF8 Encoding = "utf-8"
	// EncodingBase64 asks for standard base64 with padding.
	EncodingBase64 Encoding = "base64"
)

// sniffLen is how much of a file Read looks at to tell text from binary,
// the same amount as http.DetectContentType.
const sniffLen = 512

// readBufSize is the buffer between the file and the encoder. A read of
// any size holds this much, plus the caller's own buffers.
const readBufSize = 64 << 10

// openFlags opens for reading without ever blocking or taking a terminal:
// should a FIFO or device be swapped in after the checks, the open
// returns at once and the fstat that follows refuses it.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOCTTY

// File is a regular file opened for reading by Open.
type File struct {
	f    *os.File
	info Info
}

// Read reads raw bytes from the file.
func (f *File) Read(p []byte) (int, error) { return f.f.Read(p) }

// Close closes the file.
func (f *File) Close() error { return f.f.Close() }

// Info describes the file as it was when opened: its size is the size
// Read will reach unless the file is being written meanwhile.
func (f *File) Info() Info { return f.info }

// Open opens the regular file name for reading. The bytes are the
// caller's to stream; nothing is read ahead. A directory, device file,
// FIFO or socket is ErrInvalid, a missing file ErrNotFound.
func (s *Sandbox) Open(ctx context.Context, name string) (*File, error) {
	const op = "read"
	l, err := s.resolve(ctx, op, name, true)
	if err != nil {
		return nil, err
	}
	defer s.release(l.r)
	f, fi, err := openRegular(l.r, l.rel, op, name, l.fi)
	if err != nil {
		return nil, err
	}
	return &File{f: f, info: infoOf(l.abs(), fi)}, nil
}

// openRegular opens rel for reading and checks, on the open file itself,
// that it is a regular file. seen is what resolution found there, nil if
// nothing.
func openRegular(r *root, rel, op, name string, seen os.FileInfo) (*os.File, os.FileInfo, error) {
	if seen == nil {
		return nil, nil, newErr(op, name, ErrNotFound, "no such file")
	}
	if seen.IsDir() {
		return nil, nil, newErr(op, name, ErrInvalid, "a directory, not a file")
	}
	if !seen.Mode().IsRegular() {
		return nil, nil, newErr(op, name, ErrInvalid, "not a regular file")
	}
	f, err := r.dir.OpenFile(rel, openFlags, 0)
	if err != nil {
		return nil, nil, ioErr(op, name, err)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, nil, ioErr(op, name, err)
	}
	if !fi.Mode().IsRegular() {
		_ = f.Close()
		return nil, nil, newErr(op, name, ErrInvalid, "not a regular file (it changed while being opened)")
	}
	return f, fi, nil
}

// Content is a file being read by Read, already encoded. Read it to the
// end, or as far as wanted, and Close it.
type Content struct {
	// Info describes the file as it was when opened.
	Info Info
	// Encoding is how the bytes Read returns are encoded: UTF-8 text or
	// base64, never EncodingAuto.
	Encoding Encoding
	// ContentType is the MIME type, from the file name or else from the
	// first bytes.
	ContentType string

	r io.Reader
	f *os.File
}

// Read returns encoded bytes.
func (c *Content) Read(p []byte) (int, error) { return c.r.Read(p) }

// Close closes the file.
func (c *Content) Close() error { return c.f.Close() }

// Read opens the regular file name and returns its bytes encoded as asked
// (see Encoding), streamed: the file is read as the Content is, through
// one fixed-size buffer, so a file of any size costs the same memory. To
// put the result into a JSON message without holding it, pass the
// Content to WriteJSONString.
func (s *Sandbox) Read(ctx context.Context, name string, enc Encoding) (*Content, error) {
	if enc != EncodingAuto && enc != EncodingUTF8 && enc != EncodingBase64 {
		return nil, newErr("read", name, ErrInvalid, "unknown encoding %q (want %q or %q)", enc, EncodingUTF8, EncodingBase64)
	}
	f, err := s.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(f.f, readBufSize)
	head, err := br.Peek(sniffLen)
	if err != nil && !errors.Is(err, io.EOF) {
		_ = f.Close()
		return nil, ioErr("read", name, err)
	}
	c := &Content{Info: f.info, ContentType: f.info.ContentType, f: f.f}
	if c.ContentType == "" {
		c.ContentType = http.DetectContentType(head)
	}
	if enc == EncodingBase64 || !looksLikeText(head, len(head) == sniffLen) {
		c.Encoding, c.r = EncodingBase64, newBase64Reader(br)
	} else {
		c.Encoding, c.r = EncodingUTF8, newUTF8Reader(br)
	}
	return c, nil
}

// looksLikeText reports whether the start of a file is UTF-8 without NUL
// bytes. When more follows, a rune cut at the end of head does not count
// against it.
func looksLikeText(head []byte, more bool) bool {
	for _, b := range head {
		if b == 0 {
			return false
		}
	}
	if more {
		head = head[:len(head)-partialTail(head)]
	}
	return utf8.Valid(head)
}

// partialTail returns how many bytes at the end of b start a rune that b
// does not finish.
func partialTail(b []byte) int {
	for i := 1; i <= utf8.UTFMax-1 && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if utf8.FullRune(b[len(b)-i:]) {
				return 0
			}
			return i
		}
	}
	return 0
}

// utf8Reader passes text through, replacing each byte that is not part of
// valid UTF-8 with U+FFFD, as a JSON encoder would, so that what is sent
// is valid whatever the file holds.
type utf8Reader struct {
	src  io.Reader
	buf  []byte // bytes read; a rune cut by the last read waits at the front
	nbuf int
	out  []byte
	off  int
	err  error
}

func newUTF8Reader(src io.Reader) *utf8Reader {
	return &utf8Reader{src: src, buf: make([]byte, readBufSize)}
}

func (u *utf8Reader) Read(p []byte) (int, error) {
	for u.off == len(u.out) {
		if u.err != nil {
			return 0, u.err
		}
		n, err := u.src.Read(u.buf[u.nbuf:])
		u.nbuf += n
		if err != nil {
			u.err = err
		}
		data := u.buf[:u.nbuf]
		keep := 0
		if u.err == nil {
			keep = partialTail(data)
		}
		body := data[:len(data)-keep]
		u.out, u.off = u.out[:0], 0
		if utf8.Valid(body) {
			u.out = append(u.out, body...)
		} else {
			for len(body) > 0 {
				r, size := utf8.DecodeRune(body)
				if r == utf8.RuneError && size == 1 {
					u.out = utf8.AppendRune(u.out, utf8.RuneError)
				} else {
					u.out = append(u.out, body[:size]...)
				}
				body = body[size:]
			}
		}
		u.nbuf = copy(u.buf, data[len(data)-keep:])
	}
	n := copy(p, u.out[u.off:])
	u.off += n
	return n, nil
}

// base64Reader encodes src as standard padded base64.
type base64Reader struct {
	src []byte // raw bytes read, a multiple of 3 except at the end
	r   io.Reader
	out []byte
	off int
	err error
}

func newBase64Reader(r io.Reader) *base64Reader {
	return &base64Reader{r: r, src: make([]byte, readBufSize/4*3)}
}

func (b *base64Reader) Read(p []byte) (int, error) {
	for b.off == len(b.out) {
		if b.err != nil {
			return 0, b.err
		}
		n, err := io.ReadFull(b.r, b.src)
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = io.EOF
		}
		if err != nil {
			b.err = err
		}
		b.out = base64.StdEncoding.AppendEncode(b.out[:0], b.src[:n])
		b.off = 0
	}
	n := copy(p, b.out[b.off:])
	b.off += n
	return n, nil
}
