package codec

import (
	"errors"
	"fmt"
	"strings"
)

// baseline is one dialect this bridge speaks and the offers it accepts.
type baseline struct {
	v Version
	// caret: the baseline accepts every offer in its SemVer caret range
	// (^1.0.0 = every 1.y.z, ^0.9.0 = every 0.9.z), as upstream 1.x hosts
	// do; the connection still speaks the baseline's dialect. Without it
	// only v itself is accepted: hosts up to 0.7.0 compared versions
	// exactly, and so do the clients of those dialects.
	caret bool
}

// baselines are the dialects this bridge speaks, newest first: the one
// place that lists them (docs/protocol-versions.md §10). A connection
// speaks exactly one, chosen by Negotiate.
//
// 1.0.0 is the host's own (authoritative) state model. 0.9.0 is served by
// stripping what 1.0.0 added, 0.7.0 by the downgrades of §11, and 0.6.0, the
// 0.5 family and 0.3.0 by their own codecs applied to the 0.7.0 output
// (compose.go).
var baselines = []baseline{
	{Version{1, 0, 0}, true},
	{Version{0, 9, 0}, true},
	{Version{0, 7, 0}, false},
	{Version{0, 6, 0}, false},
	{Version{0, 5, 2}, false},
	{Version{0, 5, 1}, false},
	{Version{0, 5, 0}, false},
	{Version{0, 3, 0}, false},
}

// Current is the dialect of the host's state model: what a connection
// speaking it receives is the host's own encoding, untranslated.
var Current = baselines[0].v

// The dialects with a codec of their own.
var (
	V090 = Version{0, 9, 0}
	V070 = Version{0, 7, 0}
	V030 = Version{0, 3, 0}
)

// Supported returns the baselines this bridge speaks, newest first, as the
// strings -32005's data.supportedVersions lists. They are plain versions,
// not ranges: upstream sends its SUPPORTED_PROTOCOL_VERSIONS the same way,
// and no known client parses "^1.0.0".
func Supported() []string {
	out := make([]string, len(baselines))
	for i, b := range baselines {
		out[i] = b.v.String()
	}
	return out
}

// accepts reports whether b accepts the offer o: exactly b, or, for a
// caret baseline, an o in b's caret range. This is upstream's
// negotiateProtocolVersion test (types/version/registry.ts@0383429): same
// major; below 1.0.0 also the same minor; below 0.1.0 also the same patch;
// and not older than b.
func (b baseline) accepts(o Version) bool {
	if !b.caret {
		return o == b.v
	}
	return o.Major == b.v.Major &&
		(o.Major > 0 || o.Minor == b.v.Minor) &&
		(o.Major > 0 || o.Minor > 0 || o.Patch == b.v.Patch) &&
		!o.Less(b.v)
}

// DialectOf returns the dialect a connection that negotiated v speaks: the
// baseline that accepts v. ok is false when no baseline does.
func DialectOf(v Version) (dialect Version, ok bool) {
	for _, b := range baselines {
		if b.accepts(v) {
			return b.v, true
		}
	}
	return Version{}, false
}

// ErrMalformedVersion is wrapped by Negotiate's error when an offered
// version is not MAJOR.MINOR.PATCH (an invalid-params error on the wire).
var ErrMalformedVersion = errors.New("malformed protocol version")

// ErrNoCommonVersion is wrapped by Negotiate's error when the client offered
// no version this bridge speaks (UnsupportedProtocolVersion on the wire).
var ErrNoCommonVersion = errors.New("no protocol version in common")

// Negotiate picks, among the versions a client offers, the highest one some
// baseline accepts, whatever the client's order (upstream's
// negotiateProtocolVersion; hosts SHOULD pick the highest offered version
// they implement). It returns that offer, which the host answers with
// verbatim as protocolVersion (a client offering 1.1.0 gets "1.1.0": the
// parser forbids leading zeros, so offer.String() is the offered string),
// and the dialect the connection speaks (1.0.0 for that client), which
// chooses its codec (For). A malformed entry fails the whole offer, as
// upstream's parser throws: a client that sends one is broken, and guessing
// would hide it.
func Negotiate(offered []string) (offer, dialect Version, err error) {
	if len(offered) == 0 {
		return Version{}, Version{}, fmt.Errorf("%w: the client offered no protocol versions; this server speaks [%s]",
			ErrNoCommonVersion, strings.Join(Supported(), ", "))
	}
	found := false
	for _, s := range offered {
		v, err := ParseVersion(s)
		if err != nil {
			return Version{}, Version{}, fmt.Errorf("%w: %v", ErrMalformedVersion, err)
		}
		d, ok := DialectOf(v)
		if ok && (!found || offer.Less(v)) {
			offer, dialect, found = v, d, true
		}
	}
	if !found {
		return Version{}, Version{}, fmt.Errorf("%w: the client offered [%s], this server speaks [%s] (1.0.0 and 0.9.0 as caret ranges)",
			ErrNoCommonVersion, strings.Join(offered, ", "), strings.Join(Supported(), ", "))
	}
	return offer, dialect, nil
}
