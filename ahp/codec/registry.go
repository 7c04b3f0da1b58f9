package codec

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// The versions this bridge speaks, newest first: the one place that lists
// them. A connection speaks exactly one, chosen by Negotiate.
//
// 0.7.0 is the host's own (authoritative) state model; 0.6.0 and the 0.5
// family are served by dropping and reshaping what they do not know; 0.3.0,
// which has no chat channels, is a projection of each session's default chat
// onto its session channel.
var spoken = []Version{
	{0, 7, 0},
	{0, 6, 0},
	{0, 5, 2},
	{0, 5, 1},
	{0, 5, 0},
	{0, 3, 0},
}

// Current is the version of the host's state model: what a connection
// speaking it receives is the host's own encoding, untranslated.
var Current = spoken[0]

// The dialects with a codec of their own.
var (
	V090 = Version{0, 9, 0}
	V070 = Version{0, 7, 0}
	V030 = Version{0, 3, 0}
)

// Supported returns every version this bridge speaks, newest first, as the
// strings -32005's data.supportedVersions lists.
func Supported() []string {
	out := make([]string, len(spoken))
	for i, v := range spoken {
		out[i] = v.String()
	}
	return out
}

// ErrMalformedVersion is wrapped by Negotiate's error when an offered
// version is not MAJOR.MINOR.PATCH (an invalid-params error on the wire).
var ErrMalformedVersion = errors.New("malformed protocol version")

// ErrNoCommonVersion is wrapped by Negotiate's error when the client offered
// no version this bridge speaks (UnsupportedProtocolVersion on the wire).
var ErrNoCommonVersion = errors.New("no protocol version in common")

// Negotiate picks, among the versions a client offers, the highest one this
// bridge speaks, whatever the client's order (hosts SHOULD pick the highest
// offered version they implement). A malformed entry fails the whole offer:
// a client that sends one is broken, and guessing would hide it.
func Negotiate(offered []string) (Version, error) {
	if len(offered) == 0 {
		return Version{}, fmt.Errorf("%w: the client offered no protocol versions; this server speaks [%s]",
			ErrNoCommonVersion, strings.Join(Supported(), ", "))
	}
	var best Version
	found := false
	for _, s := range offered {
		v, err := ParseVersion(s)
		if err != nil {
			return Version{}, fmt.Errorf("%w: %v", ErrMalformedVersion, err)
		}
		if slices.Contains(spoken, v) && (!found || best.Less(v)) {
			best, found = v, true
		}
	}
	if !found {
		return Version{}, fmt.Errorf("%w: the client offered [%s], this server speaks [%s]",
			ErrNoCommonVersion, strings.Join(offered, ", "), strings.Join(Supported(), ", "))
	}
	return best, nil
}
