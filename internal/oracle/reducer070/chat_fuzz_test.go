package reducer070

import (
	"encoding/json"
	"testing"

	"github.com/ahp-bridge/ahp-bridge/ahp/v070/wire"
)

// chatFuzzState is a chat with something for every chat action to act on:
// an active turn with parts of every kind (one unknown) and tool calls in
// every status (one unknown), input requests open and answered, completed
// turns, pending messages, a draft and working directories.
const chatFuzzState = `{
  "resource": "ahp-chat:/s1/c1", "title": "T", "status": 56, "activity": "thinking", "modifiedAt": "2024-01-01T00:00:00.000Z",
  "workingDirectories": ["file:///a", "file:///b"],
  "turns": [
    {"id": "t0", "startedAt": "2024-01-01T00:00:00.000Z", "duration": 3, "message": {"text": "first", "origin": {"kind": "user"}}, "responseParts": [], "state": "complete"},
    {"id": "tx", "message": {"text": "second", "origin": {"kind": "user"}}, "responseParts": [{"kind": "markdown", "id": "p0", "content": "old"}], "state": "error", "error": {"errorType": "e", "message": "m"}}
  ],
  "turnsNextCursor": "cursor-1",
  "activeTurn": {
    "id": "t1", "startedAt": "2024-01-01T00:00:01.000Z",
    "message": {"text": "hi", "origin": {"kind": "user"}},
    "responseParts": [
      {"kind": "markdown", "id": "p1", "content": "hello"},
      {"kind": "reasoning", "id": "r1", "content": "hmm"},
      {"kind": "contentRef", "uri": "ahp-content:/x"},
      {"kind": "systemNotification", "content": {"markdown": "*note*"}},
      {"kind": "toolCall", "toolCall": {"status": "streaming", "toolCallId": "c1", "toolName": "bash", "displayName": "Bash", "partialInput": "{\"a\""}},
      {"kind": "toolCall", "toolCall": {"status": "pending-confirmation", "toolCallId": "c2", "toolName": "edit", "displayName": "Edit", "invocationMessage": "Edit a", "toolInput": "{}",
        "riskAssessment": {"kind": "judge", "status": "loading"}, "options": [{"id": "o1", "label": "Yes", "kind": "approve"}, {"id": "o2", "label": "No", "kind": "deny"}]}},
      {"kind": "toolCall", "toolCall": {"status": "running", "toolCallId": "c3", "toolName": "read", "displayName": "Read", "invocationMessage": "Read", "confirmed": "not-needed",
        "contributor": {"kind": "client", "clientId": "k1"}, "content": [{"type": "text", "text": "partial"}]}},
      {"kind": "toolCall", "toolCall": {"status": "running", "toolCallId": "c4", "toolName": "lookup", "displayName": "Lookup", "invocationMessage": "Look", "confirmed": "setting",
        "contributor": {"kind": "mcp", "customizationId": "m1"}, "selectedOption": {"id": "o1", "label": "Yes", "kind": "approve"}}},
      {"kind": "toolCall", "toolCall": {"status": "auth-required", "toolCallId": "c5", "toolName": "gh", "displayName": "GitHub", "invocationMessage": "List", "confirmed": "setting",
        "contributor": {"kind": "mcp", "customizationId": "m2"}, "auth": {"reason": "required", "resource": {"resource": "https://api.example"}}, "content": []}},
      {"kind": "toolCall", "toolCall": {"status": "pending-result-confirmation", "toolCallId": "c6", "toolName": "x", "displayName": "X", "invocationMessage": "X", "success": true, "pastTenseMessage": "did X", "confirmed": "user-action"}},
      {"kind": "toolCall", "toolCall": {"status": "completed", "toolCallId": "c7", "toolName": "y", "displayName": "Y", "invocationMessage": "Y", "success": false, "pastTenseMessage": "failed", "confirmed": "not-needed", "error": {"message": "no"}}},
      {"kind": "toolCall", "toolCall": {"status": "cancelled", "toolCallId": "c8", "toolName": "z", "displayName": "Z", "invocationMessage": "Z", "reason": "denied"}},
      {"kind": "toolCall", "toolCall": {"status": "paused", "toolCallId": "c9", "displayName": "P"}},
      {"kind": "inputRequest", "request": {"id": "i1", "questions": [{"kind": "text", "id": "q1", "message": "Name?"}], "answers": {"q1": {"state": "draft", "value": {"kind": "text", "value": "a"}}}}},
      {"kind": "inputRequest", "request": {"id": "i2"}, "response": "accept"},
      {"kind": "hologram", "id": "h1"}
    ],
    "usage": {"inputTokens": 3}
  },
  "steeringMessage": {"id": "m0", "message": {"text": "steer", "origin": {"kind": "user"}}},
  "queuedMessages": [{"id": "m1", "message": {"text": "q1", "origin": {"kind": "user"}}}, {"id": "m2", "message": {"text": "q2", "origin": {"kind": "user"}}}],
  "draft": {"text": "dra", "origin": {"kind": "user"}}
}`

// chatFuzzSeeds are one or more actions of every chat action type.
var chatFuzzSeeds = []string{
	`{"type":"chat/turnStarted","turnId":"t2","startedAt":"2024-01-01T00:00:02.000Z","message":{"text":"next","origin":{"kind":"user"}},"queuedMessageId":"m1"}`,
	`{"type":"chat/delta","turnId":"t1","partId":"p1","content":"x"}`,
	`{"type":"chat/reasoning","turnId":"t1","partId":"r1","content":"y"}`,
	`{"type":"chat/responsePart","turnId":"t1","part":{"kind":"markdown","id":"p2","content":""}}`,
	`{"type":"chat/responsePart","turnId":"t1","part":{"kind":"toolCall","toolCall":{"status":"pending-confirmation","toolCallId":"c10","toolName":"t","displayName":"T","invocationMessage":"T"}}}`,
	`{"type":"chat/usage","turnId":"t1","usage":{"outputTokens":9}}`,
	`{"type":"chat/turnComplete","turnId":"t1","duration":10}`,
	`{"type":"chat/turnCancelled","turnId":"t1","duration":-1}`,
	`{"type":"chat/error","turnId":"t1","duration":2,"error":{"errorType":"boom","message":"m"}}`,
	`{"type":"chat/activityChanged"}`,
	`{"type":"chat/workingDirectorySet","directory":"file:///c"}`,
	`{"type":"chat/workingDirectoryRemoved","directory":"file:///a"}`,
	`{"type":"chat/toolCallStart","turnId":"t1","toolCallId":"c11","toolName":"t","displayName":"T","contributor":{"kind":"client","clientId":"k1"}}`,
	`{"type":"chat/toolCallDelta","turnId":"t1","toolCallId":"c1","content":"}","invocationMessage":"Bash"}`,
	`{"type":"chat/toolCallReady","turnId":"t1","toolCallId":"c1","invocationMessage":"Run","toolInput":"ls","options":[{"id":"o","label":"Ok","kind":"approve"}],"riskAssessment":{"kind":"judge","status":"complete","reason":"fine","safety":0.9}}`,
	`{"type":"chat/toolCallReady","turnId":"t1","toolCallId":"c3","invocationMessage":"Again","confirmed":"setting","contributor":{"kind":"client","clientId":"k2"}}`,
	`{"type":"chat/toolCallConfirmed","turnId":"t1","toolCallId":"c2","approved":true,"confirmed":"user-action","editedToolInput":"{\"b\":1}","selectedOptionId":"o1"}`,
	`{"type":"chat/toolCallConfirmed","turnId":"t1","toolCallId":"c2","approved":false,"reason":"denied","reasonMessage":{"markdown":"no"},"selectedOptionId":"o2"}`,
	`{"type":"chat/toolCallComplete","turnId":"t1","toolCallId":"c3","result":{"success":true,"pastTenseMessage":"Read"},"requiresResultConfirmation":true}`,
	`{"type":"chat/toolCallComplete","turnId":"t1","toolCallId":"c5","result":{"success":false,"pastTenseMessage":"gave up"}}`,
	`{"type":"chat/toolCallResultConfirmed","turnId":"t1","toolCallId":"c6","approved":false}`,
	`{"type":"chat/toolCallContentChanged","turnId":"t1","toolCallId":"c3","content":[{"type":"terminal","resource":"ahp-terminal:/1","title":"sh"}]}`,
	`{"type":"chat/toolCallAuthRequired","turnId":"t1","toolCallId":"c4","auth":{"reason":"insufficientScope","resource":{"resource":"https://x"},"requiredScopes":["a"]}}`,
	`{"type":"chat/toolCallAuthResolved","turnId":"t1","toolCallId":"c5","_meta":{"k":1}}`,
	`{"type":"chat/truncated","turnId":"t0"}`,
	`{"type":"chat/truncated"}`,
	`{"type":"chat/turnsLoaded","turns":[{"id":"tm","message":{"text":"older","origin":{"kind":"user"}},"responseParts":[],"state":"complete"}]}`,
	`{"type":"chat/inputRequested","request":{"id":"i1","message":"again"}}`,
	`{"type":"chat/inputAnswerChanged","requestId":"i1","questionId":"q1"}`,
	`{"type":"chat/inputCompleted","requestId":"i1","response":"accept","answers":{"q1":{"state":"submitted","value":{"kind":"text","value":"b"}}}}`,
	`{"type":"chat/pendingMessageSet","kind":"steering","id":"m3","message":{"text":"s","origin":{"kind":"user"}}}`,
	`{"type":"chat/pendingMessageRemoved","kind":"queued","id":"m2"}`,
	`{"type":"chat/queuedMessagesReordered","order":["m2","m1","m2"]}`,
	`{"type":"chat/draftChanged"}`,
}

// chatFuzzNoopSeeds are actions that must leave the rich state alone.
var chatFuzzNoopSeeds = []string{
	`{"type":"chat/delta","turnId":"t1","partId":"h1","content":"x"}`,
	`{"type":"chat/delta","turnId":"t0","partId":"p1","content":"x"}`,
	`{"type":"chat/toolCallContentChanged","turnId":"t1","toolCallId":"c2","content":[]}`,
	`{"type":"chat/somethingNew","turnId":"t1"}`,
}

// FuzzChat decodes arbitrary JSON as an action and applies it (twice) to a
// rich chat state and to a zero one. Whatever the input, nothing may panic
// and the state must stay encodable and decodable.
func FuzzChat(f *testing.F) {
	for _, s := range append(chatFuzzSeeds, chatFuzzNoopSeeds...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var a wire.StateAction
		if err := json.Unmarshal(data, &a); err != nil {
			return // not an action: the decoder said so, which is all we ask
		}
		for _, initial := range []string{chatFuzzState, `{}`} {
			var s wire.ChatState
			if err := json.Unmarshal([]byte(initial), &s); err != nil {
				t.Fatalf("sample chat state: %v", err)
			}
			for range 2 {
				Chat(&s, a, chatTestClock)
			}
			chatMustRoundTrip(t, &s)
		}
	})
}

// chatMustRoundTrip returns the state's encoding after checking that it
// decodes again.
func chatMustRoundTrip(t *testing.T, s *wire.ChatState) []byte {
	t.Helper()
	b, err := wire.Marshal(s)
	if err != nil {
		t.Fatalf("state no longer encodes: %v", err)
	}
	if err := json.Unmarshal(b, new(wire.ChatState)); err != nil {
		t.Fatalf("encoded state no longer decodes: %v\n%s", err, b)
	}
	return b
}

// The seeds must act on the rich state as meant: a seed that changes
// nothing tests little, and a typo in an id would otherwise go unnoticed.
func TestChatFuzzSeedsChangeTheState(t *testing.T) {
	var base wire.ChatState
	if err := json.Unmarshal([]byte(chatFuzzState), &base); err != nil {
		t.Fatal(err)
	}
	want, err := wire.Marshal(&base)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(want, new(wire.ChatState)); err != nil {
		t.Fatal(err)
	}
	for i, seed := range append(chatFuzzSeeds, chatFuzzNoopSeeds...) {
		noop := i >= len(chatFuzzSeeds)
		var s wire.ChatState
		if err := json.Unmarshal([]byte(chatFuzzState), &s); err != nil {
			t.Fatal(err)
		}
		var a wire.StateAction
		if err := json.Unmarshal([]byte(seed), &a); err != nil {
			t.Fatalf("seed %s: %v", seed, err)
		}
		Chat(&s, a, chatTestClock)
		got := chatMustRoundTrip(t, &s)
		if changed := string(got) != string(want); changed == noop {
			t.Errorf("seed changed the state: %v, want %v: %s", changed, !noop, seed)
		}
	}
}
