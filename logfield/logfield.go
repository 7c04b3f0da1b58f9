// Package logfield gives a logger fields of its own — a session's id, a
// connection's number — for a few bytes instead of zerolog's With, which
// allocates a 500-byte context buffer for every logger it derives. The
// bridge derives such a logger for every session, chat and connection and
// keeps it for their lifetime, and idle sessions and connections must be
// cheap (issue 17, docs/performance.md).
//
// The fields are added by a hook when an event is logged, after the
// event's own fields rather than before them; the records carry the same
// fields with the same values.
package logfield

import "github.com/rs/zerolog"

// strs are string fields, key then value.
type strs []string

func (f strs) Run(e *zerolog.Event, _ zerolog.Level, _ string) {
	for i := 0; i+1 < len(f); i += 2 {
		e.Str(f[i], f[i+1])
	}
}

// uint64Field is one unsigned integer field.
type uint64Field struct {
	key string
	val uint64
}

func (f uint64Field) Run(e *zerolog.Event, _ zerolog.Level, _ string) { e.Uint64(f.key, f.val) }

// Str returns l with string fields (key, value, key, value, …) on every
// event it logs, as l.With().Str(key, value)….Logger() would.
func Str(l zerolog.Logger, kv ...string) zerolog.Logger { return l.Hook(strs(kv)) }

// Uint64 returns l with an unsigned integer field on every event it logs,
// as l.With().Uint64(key, v).Logger() would.
func Uint64(l zerolog.Logger, key string, v uint64) zerolog.Logger {
	return l.Hook(uint64Field{key: key, val: v})
}
