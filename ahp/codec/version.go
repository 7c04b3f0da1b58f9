package codec

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is an AHP protocol version, a SemVer MAJOR.MINOR.PATCH without
// pre-release or build metadata (spec: Versioning).
type Version struct{ Major, Minor, Patch int }

// ParseVersion parses "MAJOR.MINOR.PATCH". Anything else — a missing part,
// a sign, leading zeros, a pre-release tag — is an error, because the spec
// allows nothing else and a lenient parse would accept versions no host
// speaks.
func ParseVersion(s string) (Version, error) {
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return Version{}, fmt.Errorf("protocol version %q is not MAJOR.MINOR.PATCH", s)
	}
	var n [3]int
	for i, p := range parts {
		if p == "" || (len(p) > 1 && p[0] == '0') || strings.TrimLeft(p, "0123456789") != "" {
			return Version{}, fmt.Errorf("protocol version %q is not MAJOR.MINOR.PATCH", s)
		}
		v, err := strconv.Atoi(p)
		if err != nil {
			return Version{}, fmt.Errorf("protocol version %q: %w", s, err)
		}
		n[i] = v
	}
	return Version{n[0], n[1], n[2]}, nil
}

// MustParseVersion is ParseVersion for the constant versions in this
// package's tables; it panics on a malformed one (a programming error).
func MustParseVersion(s string) Version {
	v, err := ParseVersion(s)
	if err != nil {
		panic(err)
	}
	return v
}

// String returns "MAJOR.MINOR.PATCH".
func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// Compare returns -1, 0 or +1 as v is older than, equal to or newer than o.
func (v Version) Compare(o Version) int {
	switch {
	case v.Major != o.Major:
		return sign(v.Major - o.Major)
	case v.Minor != o.Minor:
		return sign(v.Minor - o.Minor)
	default:
		return sign(v.Patch - o.Patch)
	}
}

// Less reports whether v is older than o.
func (v Version) Less(o Version) bool { return v.Compare(o) < 0 }

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}
