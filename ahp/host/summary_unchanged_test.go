package host

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// TestSummaryUnchangedAgreesWithTheEncoding: the shortcut of
// refreshSummaryLocked says "nothing to announce" only where comparing the
// two summaries' encodings member by member finds no change, or only a
// modifiedAt change that the debounce coalesces.
func TestSummaryUnchangedAgreesWithTheEncoding(t *testing.T) {
	base := func() wire.SessionSummary {
		return wire.SessionSummary{
			Provider: "p", Title: "t", Status: wire.SessionStatus(1), Resource: "ahp-session:/1",
			CreatedAt: "2026-11-28T10:00:00.000Z", ModifiedAt: "2026-11-28T10:00:01.000Z",
			Activity: wire.Ptr("thinking"), WorkingDirectories: []string{"/w"},
			Changes: &wire.ChangesSummary{Files: wire.Ptr[int64](2)},
			Meta:    map[string]any{"k": "v"},
		}
	}
	for _, tc := range []struct {
		name      string
		change    func(*wire.SessionSummary)
		debounced bool
		want      bool
	}{
		{"equal", func(*wire.SessionSummary) {}, false, true},
		{"equal copies of pointers and maps", func(s *wire.SessionSummary) {
			s.Activity = wire.Ptr("thinking")
			s.Meta = map[string]any{"k": "v"}
			s.Changes = &wire.ChangesSummary{Files: wire.Ptr[int64](2)}
		}, false, true},
		{"only modifiedAt, debounced", func(s *wire.SessionSummary) { s.ModifiedAt = "2026-11-28T10:00:01.500Z" }, true, true},
		{"only modifiedAt, due", func(s *wire.SessionSummary) { s.ModifiedAt = "2026-11-28T10:00:02.500Z" }, false, false},
		{"modifiedAt and the title, debounced", func(s *wire.SessionSummary) {
			s.ModifiedAt = "2026-11-28T10:00:01.500Z"
			s.Title = "u"
		}, true, false},
		{"activity", func(s *wire.SessionSummary) { s.Activity = wire.Ptr("running") }, true, false},
		{"activity gone", func(s *wire.SessionSummary) { s.Activity = nil }, true, false},
		{"changes", func(s *wire.SessionSummary) { s.Changes.Files = wire.Ptr[int64](3) }, false, false},
		{"meta", func(s *wire.SessionSummary) { s.Meta = map[string]any{"k": "w"} }, false, false},
		{"directories", func(s *wire.SessionSummary) { s.WorkingDirectories = append(s.WorkingDirectories, "/x") }, false, false},
		{"chats", func(s *wire.SessionSummary) { s.Chats = []wire.SessionChatSummary{{Resource: "ahp-chat:/1/c"}} }, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, next := base(), base()
			tc.change(&next)
			got := summaryUnchanged(&before, &next, tc.debounced)
			assert.Equal(t, tc.want, got)
			if got {
				// What the encodings would have found: nothing, or
				// modifiedAt alone while debounced.
				b, a := summaryFields(&before), summaryFields(&next)
				for k, v := range a {
					if !bytes.Equal(b[k], v) {
						assert.True(t, k == "modifiedAt" && tc.debounced, "member %s changed", k)
					}
				}
				assert.Len(t, a, len(b))
			}
		})
	}
}
