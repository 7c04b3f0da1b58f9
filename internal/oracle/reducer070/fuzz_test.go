package reducer070

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/ahp-bridge/ahp-bridge/ahp/v070/wire"
)

// fuzzClock is the clock of the tests that are not fixtures.
func fuzzClock() int64 { return 9999 }

// Rich states: something for most actions of each channel to act on,
// including variants this package does not know (kind "hologram", type
// "theme"), which the reducers must carry through or act on without losing.
const (
	fuzzRootState = `{
  "agents": [{"provider": "copilot", "displayName": "Copilot", "description": "", "models": []}],
  "activeSessions": 2,
  "terminals": [{"resource": "ahp-terminal:/1", "title": "sh", "claim": {"kind": "client", "clientId": "c"}}],
  "config": {"schema": {"type": "object", "properties": {}}, "values": {"a": 1}},
  "_meta": {"k": "v"}
}`

	fuzzSessionState = `{
  "provider": "copilot", "title": "T", "status": 56, "activity": "thinking", "lifecycle": "ready",
  "workingDirectories": ["file:///a", "file:///b"],
  "activeClients": [{"clientId": "c1", "tools": [{"name": "t", "description": "d", "inputSchema": {"type": "object"}}]}],
  "chats": [
    {"resource": "ahp-chat:/1", "title": "main", "status": 8, "modifiedAt": "1970-01-01T00:00:01.000Z"},
    {"resource": "ahp-chat:/2", "title": "side", "status": 2, "modifiedAt": "1970-01-01T00:00:02.000Z", "origin": {"kind": "fork", "chat": "ahp-chat:/1", "turnId": "t0"}}
  ],
  "defaultChat": "ahp-chat:/1",
  "config": {"schema": {"type": "object", "properties": {}}, "values": {"a": 1}},
  "changesets": [{"label": "All", "uriTemplate": "ahp-changeset:/s", "changeKind": "session"}],
  "inputNeeded": [
    {"kind": "chatInput", "id": "i1", "chat": "ahp-chat:/1", "request": {"id": "r1", "message": "Name?"}},
    {"kind": "hologram", "id": "i2", "chat": "ahp-chat:/2"}
  ],
  "customizations": [
    {"type": "plugin", "id": "pl", "uri": "file:///p", "name": "P", "enabled": true, "children": [
      {"type": "mcpServer", "id": "m", "uri": "file:///m", "name": "M", "enabled": true, "state": {"kind": "ready"}, "channel": "mcp:/m"},
      {"type": "skill", "id": "sk", "uri": "file:///s", "name": "S"},
      {"type": "gizmo", "id": "gz"}
    ]},
    {"type": "directory", "id": "dir", "uri": "file:///d", "name": "D", "enabled": false, "children": []},
    {"type": "mcpServer", "id": "top", "uri": "file:///t", "name": "Top", "enabled": false, "state": {"kind": "authRequired"}},
    {"type": "theme", "id": "th", "children": [{"type": "mcpServer", "id": "m", "uri": "file:///m2", "name": "M2", "enabled": true, "state": {"kind": "stopped"}}]}
  ],
  "_meta": {"git": {"branch": "main"}}
}`

	fuzzChatState = `{
  "resource": "ahp-chat:/1", "title": "main", "status": 24, "modifiedAt": "1970-01-01T00:00:01.000Z",
  "turns": [{"id": "t0", "message": {"text": "first", "origin": {"kind": "user"}}, "responseParts": [], "state": "complete"}],
  "activeTurn": {
    "id": "t1", "startedAt": "1970-01-01T00:00:01.000Z",
    "message": {"text": "hi", "origin": {"kind": "user"}},
    "responseParts": [
      {"kind": "markdown", "id": "p1", "content": "hello"},
      {"kind": "reasoning", "id": "r1", "content": "hmm"},
      {"kind": "toolCall", "toolCall": {"status": "streaming", "toolCallId": "c1", "toolName": "bash", "displayName": "Bash"}},
      {"kind": "toolCall", "toolCall": {"status": "pending-confirmation", "toolCallId": "c2", "toolName": "edit", "displayName": "Edit", "invocationMessage": "Edit a", "options": [{"id": "o1", "label": "Yes", "kind": "approve"}]}},
      {"kind": "toolCall", "toolCall": {"status": "running", "toolCallId": "c3", "toolName": "read", "displayName": "Read", "invocationMessage": "Read", "confirmed": "not-needed"}},
      {"kind": "inputRequest", "request": {"id": "r1", "questions": [{"kind": "text", "id": "q1", "message": "Name?"}], "answers": {"q1": {"state": "draft", "value": {"kind": "text", "value": "a"}}}}},
      {"kind": "hologram", "id": "h1"}
    ]
  },
  "steeringMessage": {"id": "m0", "message": {"text": "steer", "origin": {"kind": "user"}}},
  "queuedMessages": [{"id": "m1", "message": {"text": "q1", "origin": {"kind": "user"}}}]
}`

	fuzzTerminalState = `{"title": "sh", "cwd": "/", "cols": 80, "rows": 24, "content": [
  {"type": "unclassified", "value": "$ "},
  {"type": "command", "commandId": "1", "commandLine": "ls", "output": "", "timestamp": 1, "isComplete": false},
  {"type": "sixel", "data": "…"}
], "claim": {"kind": "client", "clientId": "c"}}`

	fuzzChangesetState = `{"status": "error", "error": {"errorType": "x", "message": "boom"}, "files": [
  {"id": "f1", "edit": {"after": {"uri": "file:///f1", "content": {"uri": "c:/1"}}}, "reviewed": true},
  {"id": "f2", "edit": {}}
], "operations": [{"id": "o1", "label": "Apply", "scopes": ["changeset"], "status": "idle"}]}`

	fuzzAnnotationsState = `{"annotations": [
  {"id": "a1", "turnId": "t1", "resource": "file:///f", "resolved": false, "entries": [{"id": "e1", "text": "hi"}, {"id": "e2", "text": {"markdown": "*b*"}}]},
  {"id": "a2", "turnId": "t1", "resource": "file:///g", "range": {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 0}}, "resolved": true, "entries": [{"id": "e1", "text": "x"}]}
]}`

	fuzzResourceWatchState = `{"root": "file:///w", "recursive": true}`
)

// fuzzStates returns a fresh rich state and a zero state of every channel.
func fuzzStates(t *testing.T) []any {
	t.Helper()
	rich := []struct {
		doc   string
		state any
	}{
		{fuzzRootState, new(wire.RootState)},
		{fuzzSessionState, new(wire.SessionState)},
		{fuzzChatState, new(wire.ChatState)},
		{fuzzTerminalState, new(wire.TerminalState)},
		{fuzzChangesetState, new(wire.ChangesetState)},
		{fuzzAnnotationsState, new(wire.AnnotationsState)},
		{fuzzResourceWatchState, new(wire.ResourceWatchState)},
	}
	var out []any
	for _, r := range rich {
		if err := json.Unmarshal([]byte(r.doc), r.state); err != nil {
			t.Fatalf("sample %T: %v", r.state, err)
		}
		out = append(out, r.state, reflect.New(reflect.TypeOf(r.state).Elem()).Interface())
	}
	return out
}

// fuzzSeeds are actions of every channel, with ids that hit the rich states.
var fuzzSeeds = []string{
	`{"type":"root/agentsChanged","agents":[]}`,
	`{"type":"root/activeSessionsChanged","activeSessions":3}`,
	`{"type":"root/terminalsChanged","terminals":[]}`,
	`{"type":"root/configChanged","config":{"b":2},"replace":true}`,
	`{"type":"session/ready"}`,
	`{"type":"session/creationFailed","error":{"errorType":"x","message":"m"}}`,
	`{"type":"session/chatAdded","summary":{"resource":"ahp-chat:/3","title":"n","status":1,"modifiedAt":"1970-01-01T00:00:03.000Z"}}`,
	`{"type":"session/chatRemoved","chat":"ahp-chat:/1"}`,
	`{"type":"session/chatUpdated","chat":"ahp-chat:/2","changes":{"resource":"ahp-chat:/9","status":24}}`,
	`{"type":"session/defaultChatChanged","defaultChat":"ahp-chat:/2"}`,
	`{"type":"session/titleChanged","title":"t"}`,
	`{"type":"session/isReadChanged","isRead":false}`,
	`{"type":"session/isArchivedChanged","isArchived":true}`,
	`{"type":"session/activityChanged"}`,
	`{"type":"session/changesetsChanged"}`,
	`{"type":"session/configChanged","config":{"a":null}}`,
	`{"type":"session/metaChanged","_meta":{"x":[1,2]}}`,
	`{"type":"session/serverToolsChanged","tools":[]}`,
	`{"type":"session/activeClientSet","activeClient":{"clientId":"c1","tools":[]}}`,
	`{"type":"session/activeClientRemoved","clientId":"c1"}`,
	`{"type":"session/workingDirectorySet","directory":"file:///c"}`,
	`{"type":"session/workingDirectoryRemoved","directory":"file:///a"}`,
	`{"type":"session/inputNeededSet","request":{"kind":"chatInput","id":"i3","chat":"ahp-chat:/1","request":{"id":"r3"}}}`,
	`{"type":"session/inputNeededRemoved","id":"i2"}`,
	`{"type":"session/customizationsChanged","customizations":[]}`,
	`{"type":"session/customizationToggled","id":"gz","enabled":false}`,
	`{"type":"session/customizationUpdated","customization":{"type":"theme","id":"th","children":null}}`,
	`{"type":"session/customizationRemoved","id":"m"}`,
	`{"type":"session/mcpServerStateChanged","id":"m","state":{"kind":"error","error":{"errorType":"x","message":"m"}}}`,
	`{"type":"session/mcpServerStartRequested","id":"top"}`,
	`{"type":"session/mcpServerStopRequested","id":"m"}`,
	`{"type":"chat/delta","turnId":"t1","partId":"p1","content":"x"}`,
	`{"type":"chat/turnComplete","turnId":"t1"}`,
	`{"type":"terminal/data","data":"x"}`,
	`{"type":"terminal/input","data":"x"}`,
	`{"type":"terminal/resized","cols":1,"rows":1}`,
	`{"type":"terminal/claimed","claim":{"kind":"session","session":"s"}}`,
	`{"type":"terminal/titleChanged","title":"t"}`,
	`{"type":"terminal/cwdChanged","cwd":"/tmp"}`,
	`{"type":"terminal/exited","exitCode":1}`,
	`{"type":"terminal/cleared"}`,
	`{"type":"terminal/commandDetectionAvailable"}`,
	`{"type":"terminal/commandExecuted","commandId":"2","commandLine":"pwd","timestamp":2}`,
	`{"type":"terminal/commandFinished","commandId":"1","exitCode":0,"durationMs":5}`,
	`{"type":"changeset/statusChanged","status":"ready"}`,
	`{"type":"changeset/fileSet","file":{"id":"f3","edit":{}}}`,
	`{"type":"changeset/fileRemoved","fileId":"f1"}`,
	`{"type":"changeset/filesReviewChanged","files":["f2","nope"],"reviewed":true}`,
	`{"type":"changeset/contentChanged","files":[]}`,
	`{"type":"changeset/operationsChanged"}`,
	`{"type":"changeset/operationStatusChanged","operationId":"o1","status":"error"}`,
	`{"type":"changeset/cleared"}`,
	`{"type":"annotations/set","annotation":{"id":"a3","turnId":"t","resource":"r","resolved":false,"entries":[]}}`,
	`{"type":"annotations/updated","annotationId":"a2","resolved":false}`,
	`{"type":"annotations/removed","annotationId":"a1"}`,
	`{"type":"annotations/entrySet","annotationId":"a1","entry":{"id":"e3","text":"z"}}`,
	`{"type":"annotations/entryRemoved","annotationId":"a1","entryId":"e1"}`,
	`{"type":"resourceWatch/changed","changes":{"items":[]}}`,
	`{"type":"session/unheardOf","id":"m"}`,
	`{"type":"session/customizationToggled"}`,
	`{}`,
	`null`,
}

// FuzzReduce decodes arbitrary JSON as an action and applies it, twice, to a
// rich and a zero state of every channel, and once to nil states. Whatever
// the input the reducers must not panic, and every state must still encode
// and decode. The chat state is in the list although the chat reducer is
// written on another branch: until then it is a no-op, which passes.
func FuzzReduce(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var a wire.StateAction
		if err := json.Unmarshal(data, &a); err != nil {
			return // not an action: the decoder said so, which is all we ask
		}
		for _, st := range fuzzStates(t) {
			if !Apply(st, a, fuzzClock) {
				t.Fatalf("Apply refused a %T", st)
			}
			Apply(st, a, fuzzClock)
			requireRoundTrip(t, st)
		}
		for _, st := range []any{(*wire.RootState)(nil), (*wire.SessionState)(nil), (*wire.ChatState)(nil),
			(*wire.TerminalState)(nil), (*wire.ChangesetState)(nil), (*wire.AnnotationsState)(nil), (*wire.ResourceWatchState)(nil)} {
			Apply(st, a, fuzzClock)
		}
	})
}

// requireRoundTrip fails t unless state encodes and the encoding decodes into
// a fresh state of the same type.
func requireRoundTrip(t *testing.T, state any) {
	t.Helper()
	b, err := json.Marshal(state)
	if err != nil {
		t.Fatalf("%T no longer encodes: %v", state, err)
	}
	fresh := reflect.New(reflect.TypeOf(state).Elem()).Interface()
	if err := json.Unmarshal(b, fresh); err != nil {
		t.Fatalf("encoded %T no longer decodes: %v\n%s", state, err, b)
	}
}
