package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

func parseLogLevel(s string) (zerolog.Level, error) {
	switch strings.ToLower(s) {
	case "trace":
		return zerolog.TraceLevel, nil
	case "debug":
		return zerolog.DebugLevel, nil
	case "info", "":
		return zerolog.InfoLevel, nil
	case "warn", "warning":
		return zerolog.WarnLevel, nil
	case "error":
		return zerolog.ErrorLevel, nil
	}
	return zerolog.NoLevel, fmt.Errorf("unknown log level %q", s)
}

// newLogger builds the process logger; logs always go to stderr so that
// stdout stays free for the READY line or the stdio protocol. Each event
// is also written, as JSON, to every one of also (the status page's log of
// recent errors).
func newLogger(cfg Config, stderr io.Writer, also ...io.Writer) (zerolog.Logger, error) {
	level, err := parseLogLevel(cfg.LogLevel)
	if err != nil {
		return zerolog.Nop(), err
	}
	var w io.Writer = stderr
	if cfg.LogFormat == "console" {
		w = zerolog.ConsoleWriter{Out: stderr, TimeFormat: time.TimeOnly, NoColor: !isTerminal(stderr)}
	}
	if len(also) > 0 {
		w = zerolog.MultiLevelWriter(append([]io.Writer{w}, also...)...)
	}
	return zerolog.New(w).Level(level).With().Timestamp().Logger(), nil
}

// wireLogger writes every AHP frame as one JSON line in ahp-inspector's
// format: the JSON-RPC message itself plus a root-level `_ahpLog` sidecar
// with the time and the direction seen from the client (`c2s`, `s2c`).
type wireLogger struct {
	mu     sync.Mutex
	f      *os.File
	w      *bufio.Writer
	secret []byte
}

func openWireLog(path, secret string) (*wireLogger, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	wl := &wireLogger{f: f, w: bufio.NewWriter(f)}
	if secret != "" {
		wl.secret = []byte(secret)
	}
	return wl, nil
}

// write is the host's wire-log hook; dir is "in" (from a client) or "out".
func (l *wireLogger) write(dir string, frame []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.w.Write(wireLogLine(dir, frame, time.Now(), l.secret))
	_ = l.w.Flush()
}

func (l *wireLogger) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	_ = l.w.Flush()
	_ = l.f.Close()
}

// wireLogLine renders one frame as a wire-log line. A frame that is not a
// JSON object (a client's malformed input) is kept as a string under `_raw`
// so the log stays one valid JSON object per line. The connection token, if
// it ever appears in a frame, is redacted.
func wireLogLine(dir string, frame []byte, now time.Time, secret []byte) []byte {
	d := "s2c"
	if dir == "in" {
		d = "c2s"
	}
	meta := fmt.Sprintf(`"_ahpLog":{"ts":%q,"dir":%q,"byteLength":%d}`, now.UTC().Format("2006-01-02T15:04:05.000Z"), d, len(frame))
	body := bytes.TrimSpace(frame)
	if len(secret) > 0 {
		body = bytes.ReplaceAll(body, secret, []byte("[REDACTED]"))
	}
	var line []byte
	if len(body) >= 2 && body[0] == '{' && json.Valid(body) {
		inner := bytes.TrimSpace(body[1 : len(body)-1])
		line = append(line, '{')
		if len(inner) > 0 {
			line = append(line, inner...)
			line = append(line, ',')
		}
		line = append(line, meta...)
		line = append(line, '}')
	} else {
		raw, _ := json.Marshal(string(body))
		line = append(line, `{"_raw":`...)
		line = append(line, raw...)
		line = append(line, ',')
		line = append(line, meta...)
		line = append(line, '}')
	}
	return append(line, '\n')
}
