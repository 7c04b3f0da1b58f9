package codec

import (
	"errors"
	"slices"
	"testing"
)

func TestParseVersion(t *testing.T) {
	good := map[string]Version{"0.7.0": {0, 7, 0}, "1.10.2": {1, 10, 2}, "0.0.0": {}}
	for s, want := range good {
		got, err := ParseVersion(s)
		if err != nil || got != want {
			t.Errorf("ParseVersion(%q) = %v, %v; want %v", s, got, err, want)
		}
		if got.String() != s {
			t.Errorf("%v.String() = %q, want %q", got, got.String(), s)
		}
	}
	for _, s := range []string{"", "0.7", "0.7.0.1", "v0.7.0", "0.7.0-beta", "00.7.0", "0.-7.0", "0.7.x", " 0.7.0", "0..7"} {
		if v, err := ParseVersion(s); err == nil {
			t.Errorf("ParseVersion(%q) = %v, want an error", s, v)
		}
	}
}

func TestCompare(t *testing.T) {
	order := []string{"0.3.0", "0.5.0", "0.5.1", "0.5.2", "0.6.0", "0.7.0", "0.10.0", "1.0.0", "1.0.1", "1.1.0"}
	for i := range order {
		for j := range order {
			a, b := MustParseVersion(order[i]), MustParseVersion(order[j])
			want := sign(i - j)
			if got := a.Compare(b); got != want {
				t.Errorf("%s.Compare(%s) = %d, want %d", a, b, got, want)
			}
		}
	}
}

// TestNegotiate runs the offers of docs/protocol-versions.md §10: the
// client's list, the offer the host answers with, and the dialect the
// connection then speaks.
func TestNegotiate(t *testing.T) {
	cases := []struct {
		name    string
		offered []string
		offer   string // answered verbatim as protocolVersion
		dialect string
		err     error
	}{
		// The three clients of issue 13.
		{"vs code, 0.9.0 first", []string{"0.9.0", "0.8.0", "0.7.0", "0.6.0", "0.5.2", "0.5.1"}, "0.9.0", "0.9.0", nil},
		{"official 1.0 sdk", []string{"1.1.0", "1.0.0", "0.10.0", "0.9.0", "0.8.0", "0.7.0", "0.6.0", "0.5.2", "0.5.1"}, "1.1.0", "1.0.0", nil},
		{"agent-host-protocol-ui", []string{"1.0.0", "0.9.0"}, "1.0.0", "1.0.0", nil},

		// Caret ranges: the offer is echoed, the baseline's dialect spoken.
		{"1.x patch", []string{"1.0.7"}, "1.0.7", "1.0.0", nil},
		{"far 1.x", []string{"1.42.3"}, "1.42.3", "1.0.0", nil},
		{"0.9.x patch", []string{"0.9.3", "0.9.0"}, "0.9.3", "0.9.0", nil},
		{"highest wins whatever the order", []string{"0.7.0", "1.0.0"}, "1.0.0", "1.0.0", nil},
		{"highest within one range", []string{"1.0.0", "1.2.0", "1.1.0"}, "1.2.0", "1.0.0", nil},

		// Exact versions below 0.9.0.
		{"0.7.0 family", []string{"0.5.1", "0.7.0", "0.6.0"}, "0.7.0", "0.7.0", nil},
		{"0.6.0 client", []string{"0.6.0", "0.5.2", "0.5.1"}, "0.6.0", "0.6.0", nil},
		{"ahpx", []string{"0.5.0"}, "0.5.0", "0.5.0", nil},
		{"0.3.0 client", []string{"0.4.0", "0.3.0"}, "0.3.0", "0.3.0", nil},
		{"0.8.0 falls back", []string{"0.8.0", "0.7.0"}, "0.7.0", "0.7.0", nil},

		// Nothing acceptable: 0.10.0 is outside ^0.9.0, 0.8.0 is not
		// spoken, 2.0.0 is outside ^1.0.0.
		{"0.10.0 alone", []string{"0.10.0"}, "", "", ErrNoCommonVersion},
		{"0.8.0 alone", []string{"0.8.0"}, "", "", ErrNoCommonVersion},
		{"2.0.0 alone", []string{"2.0.0"}, "", "", ErrNoCommonVersion},
		{"0.7.1 is not 0.7.0", []string{"0.7.1", "0.5.3"}, "", "", ErrNoCommonVersion},
		{"none offered", nil, "", "", ErrNoCommonVersion},

		// One malformed entry fails the offer, whatever else it holds.
		{"malformed word", []string{"0.7.0", "latest"}, "", "", ErrMalformedVersion},
		{"malformed pre-release", []string{"1.0.0", "1.1.0-beta"}, "", "", ErrMalformedVersion},
		{"malformed leading zero", []string{"01.0.0"}, "", "", ErrMalformedVersion},
		{"malformed two parts", []string{"1.0"}, "", "", ErrMalformedVersion},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			offer, dialect, err := Negotiate(tc.offered)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("Negotiate(%v) error = %v, want %v", tc.offered, err, tc.err)
				}
				return
			}
			if err != nil || offer.String() != tc.offer || dialect.String() != tc.dialect {
				t.Fatalf("Negotiate(%v) = %v, %v, %v; want %s, %s", tc.offered, offer, dialect, err, tc.offer, tc.dialect)
			}
			if tc.dialect != Current.String() && For(dialect, testDirectory()) == nil {
				t.Errorf("no codec for the dialect %s", dialect)
			}
		})
	}
}

func TestSupportedListsTheBaselines(t *testing.T) {
	want := []string{"1.0.0", "0.9.0", "0.7.0", "0.6.0", "0.5.2", "0.5.1", "0.5.0", "0.3.0"}
	if got := Supported(); !slices.Equal(got, want) {
		t.Errorf("Supported() = %v, want %v", got, want)
	}
}

// TestForEveryDialect checks that For gives each dialect below Current a
// codec of that dialect, nil for Current, and the baseline's codec for a
// version inside a caret range.
func TestForEveryDialect(t *testing.T) {
	for _, s := range Supported() {
		v := MustParseVersion(s)
		c := For(v, testDirectory())
		if v == Current {
			if c != nil {
				t.Errorf("For(%s) = %T, want nil", v, c)
			}
			continue
		}
		if c == nil || c.Version() != v {
			t.Errorf("For(%s) = %v, want a %s codec", v, c, v)
		}
	}
	if c := For(MustParseVersion("1.1.0"), testDirectory()); c != nil {
		t.Errorf("For(1.1.0) = %T, want nil (the 1.0.0 dialect)", c)
	}
	if c := For(MustParseVersion("0.9.4"), testDirectory()); c == nil || c.Version() != V090 {
		t.Errorf("For(0.9.4) = %v, want the 0.9.0 codec", c)
	}
	for _, s := range []string{"0.8.0", "0.10.0", "2.0.0", "0.4.0"} {
		if c := For(MustParseVersion(s), testDirectory()); c != nil {
			t.Errorf("For(%s) = %T, want nil", s, c)
		}
	}
}

func TestSupportedListsEveryVersionOnce(t *testing.T) {
	seen := map[string]bool{}
	for i, s := range Supported() {
		if seen[s] {
			t.Errorf("%s listed twice", s)
		}
		seen[s] = true
		if i > 0 && !MustParseVersion(s).Less(MustParseVersion(Supported()[i-1])) {
			t.Errorf("Supported() is not newest first at %s", s)
		}
	}
	if Supported()[0] != Current.String() {
		t.Errorf("Current = %s, want the newest spoken version %s", Current, Supported()[0])
	}
}

func TestKnownTo(t *testing.T) {
	v051, v060, v070, v090 := MustParseVersion("0.5.1"), MustParseVersion("0.6.0"), MustParseVersion("0.7.0"), MustParseVersion("0.9.0")
	cases := []struct {
		typ  string
		v    Version
		want bool
	}{
		{"chat/delta", v051, true},
		{"chat/turnsLoaded", v051, true},
		{"chat/turnsLoaded", MustParseVersion("0.5.0"), false},
		{"chat/toolCallAuthRequired", v051, false},
		{"chat/toolCallAuthRequired", v060, true},
		{"session/workingDirectorySet", v060, false},
		{"session/workingDirectorySet", v070, true},

		// Release versions, not the registry's labels (§9).
		{"session/workingDirectoryReplaced", v070, false},
		{"session/workingDirectoryReplaced", v090, true},
		{"chat/turnResume", v070, false},
		{"chat/turnResume", v090, true},
		{"automation/set", v090, true},
		{"automation/set", v070, false},
		{"chat/isReadChanged", v090, false},
		{"chat/isReadChanged", Current, true},
		{"chat/canvasesChanged", v090, false},
		{"session/chatsReordered", v090, false},

		{"chat/somethingFromTheFuture", v070, false},
		{"chat/somethingFromTheFuture", v090, false},
		{"chat/somethingFromTheFuture", Current, true},
	}
	for _, tc := range cases {
		if got := ActionKnownTo(tc.typ, tc.v); got != tc.want {
			t.Errorf("ActionKnownTo(%s, %s) = %v, want %v", tc.typ, tc.v, got, tc.want)
		}
	}
	if NotificationKnownTo("root/progress", MustParseVersion("0.3.0")) || !NotificationKnownTo("root/progress", MustParseVersion("0.5.0")) {
		t.Error("root/progress was introduced in 0.5.0")
	}
	// Nothing 1.1.0 is sent, not even to a 1.0.0 connection (whose client
	// may have negotiated 1.1.0).
	for _, m := range []string{"channel/frame", "channel/credit", "channel/ready", "channel/reset", "channel/snapshot", "tcp/data", "tcp/eof"} {
		for _, s := range Supported() {
			if NotificationKnownTo(m, MustParseVersion(s)) {
				t.Errorf("NotificationKnownTo(%s, %s) = true; it is 1.1.0", m, s)
			}
		}
	}
}
