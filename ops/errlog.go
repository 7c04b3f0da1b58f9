package ops

import (
	"encoding/json"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"
)

// maxErrorText bounds a remembered message or error, so that one huge
// error (an agent's stderr tail) cannot take over the status page.
const maxErrorText = 500

// ErrorEntry is one warning or error the bridge logged.
type ErrorEntry struct {
	Time      time.Time
	Level     string
	Component string
	Provider  string
	Message   string
	Error     string
}

// ErrorLog remembers the last warnings and errors logged, for the status
// page. Add it to the process logger as a zerolog.LevelWriter (with
// zerolog.MultiLevelWriter beside the real output). It keeps only the
// message, the error and the component and provider fields of each event:
// other fields may carry session content.
type ErrorLog struct {
	mu      sync.Mutex
	entries []ErrorEntry // a ring of cap n
	next    int
	n       int
}

var _ zerolog.LevelWriter = (*ErrorLog)(nil)

// NewErrorLog returns an ErrorLog keeping the last n entries.
func NewErrorLog(n int) *ErrorLog {
	return &ErrorLog{n: max(n, 1)}
}

// Write implements io.Writer for events whose level zerolog did not say;
// it reads the level from the event.
func (l *ErrorLog) Write(p []byte) (int, error) {
	return l.WriteLevel(zerolog.NoLevel, p)
}

// WriteLevel implements zerolog.LevelWriter: warnings and worse are
// remembered, everything else is ignored. It never fails, so that the
// log's real output is never disturbed by it.
func (l *ErrorLog) WriteLevel(level zerolog.Level, p []byte) (int, error) {
	if level != zerolog.NoLevel && level < zerolog.WarnLevel {
		return len(p), nil
	}
	var ev struct {
		Time      string `json:"time"`
		Level     string `json:"level"`
		Component string `json:"component"`
		Provider  string `json:"provider"`
		Message   string `json:"message"`
		Error     string `json:"error"`
	}
	if json.Unmarshal(p, &ev) != nil {
		return len(p), nil
	}
	if level == zerolog.NoLevel {
		lv, err := zerolog.ParseLevel(ev.Level)
		if err != nil || lv < zerolog.WarnLevel {
			return len(p), nil
		}
	}
	e := ErrorEntry{Level: ev.Level, Component: ev.Component, Provider: ev.Provider,
		Message: clip(ev.Message), Error: clip(ev.Error)}
	if t, err := time.Parse(time.RFC3339Nano, ev.Time); err == nil {
		e.Time = t
	} else {
		e.Time = time.Now()
	}
	l.mu.Lock()
	if len(l.entries) < l.n {
		l.entries = append(l.entries, e)
	} else {
		l.entries[l.next] = e
	}
	l.next = (l.next + 1) % l.n
	l.mu.Unlock()
	return len(p), nil
}

// Entries returns the remembered entries, newest first.
func (l *ErrorLog) Entries() []ErrorEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]ErrorEntry, 0, len(l.entries))
	for i := range len(l.entries) {
		// next-1 is the newest; walk backwards around the ring.
		out = append(out, l.entries[(l.next-1-i+l.n)%l.n])
	}
	return out
}

// clip shortens s to about maxErrorText bytes, on a character boundary.
func clip(s string) string {
	if len(s) <= maxErrorText {
		return s
	}
	cut := maxErrorText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
