package reducer030

import (
	"encoding/json"
	"testing"

	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
)

// fuzzSessionState is a session with something for most actions to act on:
// an active turn with parts and tool calls in several states, completed
// turns, input requests, pending messages, customizations and config.
const fuzzSessionState = `{
  "summary": {"resource": "copilot:/s1", "provider": "copilot", "title": "T", "status": 24, "createdAt": 1, "modifiedAt": 2},
  "lifecycle": "ready",
  "turns": [{"id": "t0", "message": {"text": "first", "origin": {"kind": "user"}}, "responseParts": [], "state": "complete"}],
  "activeTurn": {
    "id": "t1",
    "message": {"text": "hi", "origin": {"kind": "user"}},
    "responseParts": [
      {"kind": "markdown", "id": "p1", "content": "hello"},
      {"kind": "reasoning", "id": "r1", "content": "hmm"},
      {"kind": "toolCall", "toolCall": {"status": "streaming", "toolCallId": "c1", "toolName": "bash", "displayName": "Bash"}},
      {"kind": "toolCall", "toolCall": {"status": "pending-confirmation", "toolCallId": "c2", "toolName": "edit", "displayName": "Edit", "invocationMessage": "Edit a", "options": [{"id": "o1", "label": "Yes", "kind": "approve"}]}},
      {"kind": "toolCall", "toolCall": {"status": "running", "toolCallId": "c3", "toolName": "read", "displayName": "Read", "invocationMessage": "Read", "confirmed": "not-needed"}},
      {"kind": "toolCall", "toolCall": {"status": "pending-result-confirmation", "toolCallId": "c4", "toolName": "x", "displayName": "X", "invocationMessage": "X", "success": true, "pastTenseMessage": "did X", "confirmed": "setting"}},
      {"kind": "toolCall", "toolCall": {"status": "paused", "toolCallId": "c5"}},
      {"kind": "hologram", "id": "h1"}
    ]
  },
  "steeringMessage": {"id": "m0", "message": {"text": "steer", "origin": {"kind": "user"}}},
  "queuedMessages": [{"id": "m1", "message": {"text": "q1", "origin": {"kind": "user"}}}, {"id": "m2", "message": {"text": "q2", "origin": {"kind": "user"}}}],
  "inputRequests": [{"id": "i1", "questions": [{"kind": "text", "id": "q1", "message": "Name?"}], "answers": {"q1": {"state": "draft", "value": {"kind": "text", "value": "a"}}}}],
  "config": {"schema": {"type": "object", "properties": {}}, "values": {"a": 1}},
  "activeClient": {"clientId": "c", "tools": []},
  "customizations": [
    {"type": "plugin", "id": "pl", "uri": "file:///p", "name": "P", "enabled": true, "children": [
      {"type": "mcpServer", "id": "m", "uri": "file:///m", "name": "M", "enabled": true, "state": {"kind": "ready"}},
      {"type": "skill", "id": "sk", "uri": "file:///s", "name": "S"}
    ]},
    {"type": "mcpServer", "id": "top", "uri": "file:///t", "name": "Top", "enabled": false, "state": {"kind": "stopped"}},
    {"type": "theme", "id": "th"}
  ]
}`

const fuzzTerminalState = `{"title": "sh", "content": [{"type": "command", "commandId": "1", "commandLine": "ls", "output": "", "timestamp": 1, "isComplete": false}], "claim": {"kind": "client", "clientId": "c"}}`

const fuzzChangesetState = `{"status": "ready", "files": [{"id": "f1", "edit": {}}], "operations": [{"id": "o1", "label": "Apply", "scopes": ["changeset"], "status": "idle"}]}`

// FuzzReduceSession decodes arbitrary JSON as an action and applies it
// (twice) to a rich session state, and to terminal, changeset and root
// states. Whatever the input, the reducers must not panic and the states
// must stay encodable and decodable.
func FuzzReduceSession(f *testing.F) {
	f.Add([]byte(`{"type":"session/delta","turnId":"t1","partId":"p1","content":"x"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var a wire.StateAction
		if err := json.Unmarshal(data, &a); err != nil {
			return // not an action: the decoder said so, which is all we ask
		}
		var s wire.SessionState
		if err := json.Unmarshal([]byte(fuzzSessionState), &s); err != nil {
			t.Fatalf("sample session state: %v", err)
		}
		Session(&s, a, fixedClock)
		Session(&s, a, fixedClock)
		mustRoundTrip(t, &s, new(wire.SessionState))

		var term wire.TerminalState
		if err := json.Unmarshal([]byte(fuzzTerminalState), &term); err != nil {
			t.Fatalf("sample terminal state: %v", err)
		}
		Terminal(&term, a, fixedClock)
		mustRoundTrip(t, &term, new(wire.TerminalState))

		var cs wire.ChangesetState
		if err := json.Unmarshal([]byte(fuzzChangesetState), &cs); err != nil {
			t.Fatalf("sample changeset state: %v", err)
		}
		Changeset(&cs, a, fixedClock)
		mustRoundTrip(t, &cs, new(wire.ChangesetState))

		root := wire.RootState{Config: &wire.RootConfigState{Values: map[string]any{}}}
		Root(&root, a, fixedClock)
		mustRoundTrip(t, &root, new(wire.RootState))

		// The zero states must survive too.
		Session(new(wire.SessionState), a, fixedClock)
		Terminal(new(wire.TerminalState), a, fixedClock)
		Changeset(new(wire.ChangesetState), a, fixedClock)
		Root(nil, a, fixedClock)
	})
}

func mustRoundTrip(t *testing.T, state, fresh any) {
	t.Helper()
	b, err := json.Marshal(state)
	if err != nil {
		t.Fatalf("state no longer encodes: %v", err)
	}
	if err := json.Unmarshal(b, fresh); err != nil {
		t.Fatalf("encoded state no longer decodes: %v\n%s", err, b)
	}
}
