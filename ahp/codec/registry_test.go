package codec

import (
	"errors"
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

func TestNegotiate(t *testing.T) {
	cases := []struct {
		name    string
		offered []string
		want    string
		err     error
	}{
		{"highest wins whatever the order", []string{"0.5.1", "0.7.0", "0.6.0"}, "0.7.0", nil},
		{"vs code offer", []string{"0.9.0", "0.7.0", "0.6.0", "0.5.2", "0.5.1"}, "0.7.0", nil},
		{"0.6.0 client", []string{"0.6.0", "0.5.2", "0.5.1"}, "0.6.0", nil},
		{"ahpx", []string{"0.5.0"}, "0.5.0", nil},
		{"0.3.0 client", []string{"0.3.0"}, "0.3.0", nil},
		{"unknown only", []string{"0.4.0", "2.0.0"}, "", ErrNoCommonVersion},
		{"none offered", nil, "", ErrNoCommonVersion},
		{"malformed", []string{"0.7.0", "latest"}, "", ErrMalformedVersion},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Negotiate(tc.offered)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("Negotiate(%v) error = %v, want %v", tc.offered, err, tc.err)
				}
				return
			}
			if err != nil || got.String() != tc.want {
				t.Fatalf("Negotiate(%v) = %v, %v; want %s", tc.offered, got, err, tc.want)
			}
		})
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
	v051, v060, v070 := MustParseVersion("0.5.1"), MustParseVersion("0.6.0"), MustParseVersion("0.7.0")
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
		{"session/workingDirectoryReplaced", MustParseVersion("0.9.0"), true},
		{"chat/turnResume", v070, false},
		{"chat/turnResume", MustParseVersion("0.9.0"), true},
		{"automation/set", MustParseVersion("0.9.0"), true},
		{"automation/set", MustParseVersion("0.8.0"), false},
		{"chat/isReadChanged", MustParseVersion("0.9.0"), false},
		{"chat/isReadChanged", MustParseVersion("1.0.0"), true},
		{"chat/canvasesChanged", MustParseVersion("0.10.0"), false},
		{"session/chatsReordered", MustParseVersion("0.9.0"), false},

		{"chat/somethingFromTheFuture", v060, false},
		{"chat/somethingFromTheFuture", v070, true},
	}
	for _, tc := range cases {
		if got := ActionKnownTo(tc.typ, tc.v); got != tc.want {
			t.Errorf("ActionKnownTo(%s, %s) = %v, want %v", tc.typ, tc.v, got, tc.want)
		}
	}
	if NotificationKnownTo("root/progress", MustParseVersion("0.3.0")) || !NotificationKnownTo("root/progress", MustParseVersion("0.5.0")) {
		t.Error("root/progress was introduced in 0.5.0")
	}
	for _, m := range []string{"channel/frame", "channel/credit", "channel/ready", "channel/reset", "channel/snapshot", "tcp/data", "tcp/eof"} {
		if NotificationKnownTo(m, MustParseVersion("1.0.0")) {
			t.Errorf("NotificationKnownTo(%s, 1.0.0) = true; it is 1.1.0", m)
		}
	}
}
