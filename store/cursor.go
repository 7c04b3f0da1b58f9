package store

import (
	"encoding/base64"
	"strconv"
	"strings"
)

// Cursors are opaque to clients (AHP says so) but not to us: a version
// prefix, then the keyset, base64url-encoded so that they travel as plain
// strings. The prefix lets a later schema change its keyset and still reject
// old cursors cleanly.
const (
	sessionCursorPrefix = "s1:"
	turnCursorPrefix    = "t1:"
)

func encodeSessionCursor(modifiedNS int64, uri string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(sessionCursorPrefix + strconv.FormatInt(modifiedNS, 10) + ":" + uri))
}

func decodeSessionCursor(c string) (modifiedNS int64, uri string, err error) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, "", ErrBadCursor
	}
	rest, ok := strings.CutPrefix(string(raw), sessionCursorPrefix)
	if !ok {
		return 0, "", ErrBadCursor
	}
	ns, uri, ok := strings.Cut(rest, ":")
	if !ok {
		return 0, "", ErrBadCursor
	}
	modifiedNS, err = strconv.ParseInt(ns, 10, 64)
	if err != nil {
		return 0, "", ErrBadCursor
	}
	return modifiedNS, uri, nil
}

func encodeTurnCursor(idx int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(turnCursorPrefix + strconv.FormatInt(idx, 10)))
}

func decodeTurnCursor(c string) (int64, error) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, ErrBadCursor
	}
	rest, ok := strings.CutPrefix(string(raw), turnCursorPrefix)
	if !ok {
		return 0, ErrBadCursor
	}
	idx, err := strconv.ParseInt(rest, 10, 64)
	if err != nil || idx < 1 {
		return 0, ErrBadCursor
	}
	return idx, nil
}
