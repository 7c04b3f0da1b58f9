package mapping

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
)

// partText is the kind and content of a markdown or reasoning part.
type partText struct{ kind, content string }

// textParts returns the markdown and reasoning parts of the chat's active
// turn (or, once it ended, of its last turn), by id.
func textParts(s *wire.ChatState) map[string]partText {
	var parts []wire.ResponsePart
	switch {
	case s.ActiveTurn != nil:
		parts = s.ActiveTurn.ResponseParts
	case len(s.Turns) > 0:
		parts = s.Turns[len(s.Turns)-1].ResponseParts
	}
	out := map[string]partText{}
	for _, p := range parts {
		switch v := p.Value.(type) {
		case *wire.MarkdownResponsePart:
			out[v.ID] = partText{"markdown", v.Content}
		case *wire.ReasoningResponsePart:
			out[v.ID] = partText{"reasoning", v.Content}
		}
	}
	return out
}

// randomEvent is one backend event of a turn, drawn from what ACP agents
// send: text and thought chunks (some empty, some repeating what came
// before, as an agent re-sending its message would), other content, tool
// calls started, updated with content (replaced or appended) and
// completed, permission requests, plans, custom updates.
func randomEvent(rng *rand.Rand, i int) backend.Event {
	tool := fmt.Sprintf("tc%d", rng.Intn(4))
	switch rng.Intn(12) {
	case 0, 1, 2:
		return backend.TextChunk{Text: []string{"", "a", "hello ", "hello world", "ü€\n"}[rng.Intn(5)]}
	case 3, 4:
		return backend.ThoughtChunk{Text: []string{"", "hm", "thinking… ", "hm"}[rng.Intn(4)]}
	case 5:
		return backend.ContentBlock{Type: []string{"text", "resource_link", "image"}[rng.Intn(3)], Text: "block", URI: "file:///x", Data: "aGk="}
	case 6:
		return backend.ToolCall{ID: tool, Title: "Run `ls`", Kind: "execute", Status: backend.ToolPending, RawInput: json.RawMessage(`{"command":"ls"}`)}
	case 7:
		return backend.ToolCall{ID: tool, Update: true, Status: backend.ToolInProgress, ContentMode: backend.ContentMode(rng.Intn(3)),
			Content: []backend.ToolContent{{Type: "content", Text: fmt.Sprintf("out %d", i)}}}
	case 8:
		return backend.ToolCall{ID: tool, Update: true, Status: []backend.ToolStatus{backend.ToolCompleted, backend.ToolFailed}[rng.Intn(2)],
			ContentMode: backend.ContentReplace, Content: []backend.ToolContent{{Type: "content", Text: "done"}}}
	case 9:
		return backend.PermissionRequest{ToolCall: backend.ToolCall{ID: tool, Update: true},
			Options: []backend.PermissionOption{{ID: "allow", Name: "Allow", Kind: backend.AllowOnce}}}
	case 10:
		return backend.Plan{Entries: []backend.PlanEntry{{Content: "step", Status: []string{"pending", "in_progress", "completed"}[rng.Intn(3)]}}}
	default:
		return backend.Custom{Kind: "_x", Raw: json.RawMessage(`{"n":1}`)}
	}
}

// TestTextPartsOnlyGrow is a property test over random turns: the content
// of a markdown or reasoning part, once a client has seen it, is only ever
// appended to (VS Code reads these parts as deltas by content length, and
// does not show a rewrite), a part never changes kind or disappears, and
// the text parts together hold every chunk's text, in order.
func TestTextPartsOnlyGrow(t *testing.T) {
	for seed := int64(1); seed <= 400; seed++ {
		rng := rand.New(rand.NewSource(seed))
		turn := newTestTurn()
		r := newReplay(t)
		seen := map[string]partText{}
		var sent, sentThought strings.Builder
		check := func(what string) {
			now := textParts(r.chat)
			for id, before := range seen {
				after, ok := now[id]
				require.True(t, ok, "seed %d, %s: part %s disappeared", seed, what, id)
				require.Equal(t, before.kind, after.kind, "seed %d, %s: part %s changed kind", seed, what, id)
				require.True(t, strings.HasPrefix(after.content, before.content),
					"seed %d, %s: part %s was rewritten: %q then %q", seed, what, id, before.content, after.content)
			}
			seen = now
		}
		n := 1 + rng.Intn(40)
		for i := range n {
			ev := randomEvent(rng, i)
			switch e := ev.(type) {
			case backend.TextChunk:
				sent.WriteString(e.Text)
			case backend.ContentBlock:
				if e.Type == "text" {
					sent.WriteString(e.Text)
				}
			case backend.ThoughtChunk:
				sentThought.WriteString(e.Text)
			}
			for _, a := range turn.Apply(ev) {
				r.apply(a)
				check(fmt.Sprintf("event %d (%T)", i, ev))
			}
		}
		for _, a := range turn.End(backend.TurnResult{StopReason: backend.StopEndTurn, Summary: "summary"}, nil) {
			r.apply(a)
			check("end")
		}

		// Every chunk's text is in the parts that streamed it, in order.
		var gotText, gotThought strings.Builder
		for _, p := range r.chat.Turns[len(r.chat.Turns)-1].ResponseParts {
			switch v := p.Value.(type) {
			case *wire.MarkdownResponsePart:
				if strings.HasPrefix(v.Content, "**Plan**") || v.Content == "summary" || strings.Contains(v.Content, "file:///x") {
					continue // the plan checklist, the summary, a link: parts of their own
				}
				gotText.WriteString(v.Content)
			case *wire.ReasoningResponsePart:
				gotThought.WriteString(v.Content)
			}
		}
		require.Equal(t, sent.String(), gotText.String(), "seed %d: the streamed text", seed)
		require.Equal(t, sentThought.String(), gotThought.String(), "seed %d: the streamed reasoning", seed)
	}
}
