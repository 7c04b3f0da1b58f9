//go:build unix

package sandbox

import (
	"bufio"
	"io"
)

// WriteJSONString writes everything r yields to w as one JSON string
// literal, quotes included, and returns the number of bytes written. It
// streams: however large r is, it holds only fixed-size buffers, which is
// what lets a host answer resourceRead for a large file by writing the
// response around a Content instead of building it in memory. Bytes that
// are not valid UTF-8 become U+FFFD, as encoding/json does.
func WriteJSONString(w io.Writer, r io.Reader) (int64, error) {
	cw := &countWriter{w: w}
	bw := bufio.NewWriterSize(cw, readBufSize)
	src := newUTF8Reader(r)
	buf := make([]byte, readBufSize)
	_ = bw.WriteByte('"')
	if c, ok := r.(*Content); ok && c.Encoding == EncodingBase64 {
		// The base64 alphabet needs no escaping in JSON.
		_, err := io.Copy(bw, c)
		if err == nil {
			err = bw.WriteByte('"')
		}
		if ferr := bw.Flush(); err == nil {
			err = ferr
		}
		return cw.n, err
	}
	for {
		n, err := src.Read(buf)
		if n > 0 {
			writeEscaped(bw, buf[:n])
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			_ = bw.Flush()
			return cw.n, err
		}
	}
	_ = bw.WriteByte('"')
	err := bw.Flush()
	return cw.n, err
}

// writeEscaped escapes the ASCII bytes JSON requires escaping. The input
// is valid UTF-8, whose multi-byte sequences never contain ASCII bytes,
// so working byte by byte is safe even where a rune is split between two
// calls.
func writeEscaped(bw *bufio.Writer, p []byte) {
	const hex = "0123456789abcdef"
	start := 0
	for i, c := range p {
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		_, _ = bw.Write(p[start:i])
		switch c {
		case '"', '\\':
			_, _ = bw.Write([]byte{'\\', c})
		case '\n':
			_, _ = bw.WriteString(`\n`)
		case '\r':
			_, _ = bw.WriteString(`\r`)
		case '\t':
			_, _ = bw.WriteString(`\t`)
		default:
			_, _ = bw.Write([]byte{'\\', 'u', '0', '0', hex[c>>4], hex[c&0xf]})
		}
		start = i + 1
	}
	_, _ = bw.Write(p[start:])
}

// countWriter counts the bytes that reach w; bufio.Writer keeps the first
// error and reports it from Flush.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
