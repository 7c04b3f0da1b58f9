package codec

import (
	"bytes"
	"encoding/json"
	"fmt"

	w7 "github.com/ahp-bridge/ahp-bridge/ahp/v070/wire"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// downgrade serves a dialect older than the host's 1.0.0 but still of the
// chat-channel model, 0.9.0 or 0.7.0, from the host's 1.0.0 traffic
// (docs/protocol-versions.md §11, the "0.9 codec" and "0.7 codec" columns):
//
//   - 0.9.0 only lacks what 1.0.0 added, so its codec strips members and
//     drops actions, and never reshapes anything;
//   - 0.7.0 also gets back the 0.7.0 spelling of what 0.8.0 and 0.9.0
//     changed: turn errors on the turn rather than as response parts,
//     "creationFailed", terminal exit codes, annotation turn ids,
//     customization `enabled` flags, claims without a chat.
//
// The 0.7.0 codec is also the first stage of the older dialects (compose.go),
// whose codecs take 0.7.0; states070 gives them typed 0.7.0 states.
//
// Like chatFamily, rewrites work on decoded JSON trees, so that unknown
// members survive and numbers keep their digits, and each envelope, state or
// message is translated on its own, from its bytes and the Directory alone:
// the host may translate a broadcast once and again on replay and get the
// same bytes. The bridge never marks an error resumable and always rejects
// chat/turnResume, so a turn holds at most one error part, at its end: no
// turn is split for 0.7.0 (§12's X~n scheme is not needed).
type downgrade struct {
	v   Version
	dir Directory
	f   older1x
	// triggers are the quoted names whose presence in encoded JSON means a
	// rewrite of this dialect may apply; JSON without any of them passes
	// through undecoded (mayNeedRewrite).
	triggers [][]byte
}

// older1x lists what one dialect lacks or spells differently compared with
// 1.0.0, so that the rewrites read as rules and each version's treatment is
// decided in one place (newDowngrade).
type older1x struct {
	// What 1.0.0 added (§9): unknown to 0.9.0 and older.
	noChatCatalogue bool // SessionSummary.chats and .defaultChat
	noChatExtras    bool // ChatSummary/ChatState changes and movable; ChatState changesets, backgroundWork, canvases
	noRecomputing   bool // ChangesetStatus "recomputing"
	noMcpBlocking   bool // McpServerStartingState.blocking
	noItemBounds    bool // ConfigPropertySchema minItems and maxItems

	// What 0.8.0 and 0.9.0 changed: spelt the 0.7.0 way.
	errorOnTurn          bool // Turn.error and chat/error {error}, no error response parts
	creationFailed       bool // SessionLifecycle "creationFailed" for "failed"
	terminalExitCode     bool // TerminalState/TerminalInfo exitCode for lifecycle
	claimWithoutChat     bool // TerminalSessionClaim has no chat
	annotationTurnID     bool // Annotation(sUpdated).turnId for origin
	enabledFlag          bool // Plugin/McpServer customization enabled for enablement
	noSessionOrigin      bool // SessionSummary/SessionState origin (0.9.0's automation sessions)
	noPrimaryReplacement bool // multipleWorkingDirectories.primaryReplacement
	authResourceURI      bool // auth/required resource is its URI, not ProtectedResourceMetadata
	noInitializeExtras   bool // InitializeResult _meta and automations
	splitReplaced        bool // session/workingDirectoryReplaced becomes removed + set
	createSessionFork    bool // createSession may carry fork (removed in 0.9.0)
	noAutomations        bool // the automation commands (0.9.0)
}

func newV090() *downgrade { return newDowngrade(V090, nil) }

func newV070(dir Directory) *downgrade { return newDowngrade(V070, dir) }

func newDowngrade(v Version, dir Directory) *downgrade {
	pre10 := v.Less(Version{1, 0, 0})
	pre08 := v.Less(Version{0, 8, 0})
	pre09 := v.Less(Version{0, 9, 0})
	f := older1x{
		noChatCatalogue: pre10,
		noChatExtras:    pre10,
		noRecomputing:   pre10,
		noMcpBlocking:   pre10,
		noItemBounds:    pre10,

		errorOnTurn:          pre09,
		creationFailed:       pre09,
		terminalExitCode:     pre09,
		claimWithoutChat:     pre09,
		annotationTurnID:     pre09,
		enabledFlag:          pre08,
		noSessionOrigin:      pre09,
		noPrimaryReplacement: pre08,
		authResourceURI:      pre08,
		noInitializeExtras:   pre09,
		splitReplaced:        pre08,
		createSessionFork:    pre09,
		noAutomations:        pre09,
	}
	names := []string{"changes", "movable", "changesets", "backgroundWork", "canvases", "blocking",
		"minItems", "maxItems", "recomputing", "chats", "defaultChat"}
	if pre09 {
		// Error parts, "failed", terminal lifecycles, claims, origins,
		// and the plugin and MCP customizations whose enabled flag 0.7.0
		// requires.
		names = append(names, "error", "failed", "lifecycle", "claim", "origin", "plugin", "mcpServer",
			"primaryReplacement")
	}
	triggers := make([][]byte, len(names))
	for i, n := range names {
		triggers[i] = []byte(`"` + n + `"`)
	}
	return &downgrade{v: v, dir: dir, f: f, triggers: triggers}
}

func (c *downgrade) Version() Version { return c.v }

// Channels is the identity: these dialects name the same channels.
func (c *downgrade) Channels(uri string) []string { return []string{uri} }

// Snapshot encodes the first state in this dialect. A session's catalogue
// entry may follow it (see Codec.Snapshot); these dialects' session state
// does not carry it.
func (c *downgrade) Snapshot(uri string, states []any) (json.RawMessage, error) {
	if len(states) < 1 {
		return nil, Errorf(wire.CodeInternalError, "a %s snapshot of %s needs a state, got none", c.v, uri)
	}
	for _, extra := range states[1:] {
		if _, ok := extra.(*wire.SessionSummary); !ok {
			return nil, Errorf(wire.CodeInternalError, "a %s snapshot of %s got an unexpected %T after its state", c.v, uri, extra)
		}
	}
	return c.lowerState(uri, states[0])
}

// lowerState encodes one host state (or catalogue entry) in this dialect.
func (c *downgrade) lowerState(uri string, state any) (json.RawMessage, error) {
	var down func(map[string]any)
	switch state.(type) {
	case *wire.RootState:
		down = c.root
	case *wire.SessionState:
		down = c.session
	case *wire.ChatState:
		down = c.chat
	case *wire.TerminalState:
		down = c.terminal
	case *wire.ChangesetState:
		down = c.changeset
	case *wire.AnnotationsState:
		down = c.annotations
	case *wire.SessionSummary:
		down = c.sessionSummary
	case *wire.ResourceWatchState:
		// Unchanged since 0.2.0.
	default:
		// Automation and canvas channels have no ACP backing; the host
		// has none to snapshot.
		return nil, Errorf(wire.CodeInternalError, "a %s snapshot of %s cannot be made from a %T", c.v, uri, state)
	}
	b, err := wire.Marshal(state)
	if err != nil {
		return nil, Errorf(wire.CodeInternalError, "encoding the state of %s: %v", uri, err)
	}
	if down == nil {
		return b, nil
	}
	out, err := c.rewrite(b, func(m map[string]any) bool { down(m); return true })
	if err != nil {
		return nil, Errorf(wire.CodeInternalError, "translating the state of %s to %s: %v", uri, c.v, err)
	}
	return out, nil
}

// states070 is Snapshot for the codecs that take 0.7.0 states (compose.go):
// each host state, the catalogue entry included, as the ahp/v070/wire value
// the 0.7.0 dialect has for it. Only the 0.7.0 codec has it.
func (c *downgrade) states070(uri string, states []any) ([]any, error) {
	if c.v != V070 {
		return nil, Errorf(wire.CodeInternalError, "AHP %s states are not 0.7.0", c.v)
	}
	out := make([]any, len(states))
	for i, s := range states {
		var dst any
		switch s.(type) {
		case *wire.RootState:
			dst = new(w7.RootState)
		case *wire.SessionState:
			dst = new(w7.SessionState)
		case *wire.ChatState:
			dst = new(w7.ChatState)
		case *wire.TerminalState:
			dst = new(w7.TerminalState)
		case *wire.ChangesetState:
			dst = new(w7.ChangesetState)
		case *wire.AnnotationsState:
			dst = new(w7.AnnotationsState)
		case *wire.ResourceWatchState:
			dst = new(w7.ResourceWatchState)
		case *wire.SessionSummary:
			dst = new(w7.SessionSummary)
		default:
			return nil, Errorf(wire.CodeInternalError, "a %s snapshot of %s cannot be made from a %T", c.v, uri, s)
		}
		b, err := c.lowerState(uri, s)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, dst); err != nil {
			return nil, Errorf(wire.CodeInternalError, "the 0.7.0 state of %s: %v", uri, err)
		}
		out[i] = dst
	}
	return out, nil
}

func (c *downgrade) Envelope(e Envelope) []Envelope {
	out, same := c.down(e)
	if same {
		return []Envelope{e}
	}
	return out
}

// down is Envelope with the common case apart: same reports that e goes
// out as it is, which costs a type scan and no allocation (and lets the
// composed codecs hand e to the next stage as it is); otherwise out is what
// goes out, possibly nothing.
func (c *downgrade) down(e Envelope) (out []Envelope, same bool) {
	t := string(actionTypeBytes(e.Action))
	if t == "session/workingDirectoryReplaced" && c.f.splitReplaced {
		return c.splitReplaced(e), false
	}
	if !ActionKnownTo(t, c.v) {
		return nil, false
	}
	if !c.mayRewriteAction(t, e.Action) {
		return nil, true
	}
	tree, err := decodeTree(e.Action)
	a, ok := tree.(map[string]any)
	if err != nil || !ok {
		// The host encoded it, so this cannot happen; as chatFamily, the
		// codec polices what the version knows, not the host's JSON.
		return nil, true
	}
	if !c.downAction(t, a) {
		return nil, false
	}
	b, err := wire.Marshal(a)
	if err != nil {
		return nil, true
	}
	e.Action = b
	return []Envelope{e}, false
}

// splitReplaced says session/workingDirectoryReplaced the 0.7.0 way:
// session/workingDirectoryRemoved then session/workingDirectorySet, under
// the one serverSeq. The directory loses its position (0.7.0 appends), so
// a 0.7.0 client's order differs until its next snapshot; and a 0.7.0
// client adds the replacement even where 1.0.0 ignores the action (its
// directory absent), which a stateless codec cannot see. Only the first
// keeps the origin (a 0.7.0 client never sends this action, so it is never
// its own echo).
func (c *downgrade) splitReplaced(e Envelope) []Envelope {
	var a wire.SessionWorkingDirectoryReplacedAction
	if json.Unmarshal(e.Action, &a) != nil {
		return nil
	}
	removed, err := w7.Marshal(w7.Action(&w7.SessionWorkingDirectoryRemovedAction{Directory: a.Directory}))
	if err != nil {
		return nil
	}
	set, err := w7.Marshal(w7.Action(&w7.SessionWorkingDirectorySetAction{Directory: a.Replacement}))
	if err != nil {
		return nil
	}
	return []Envelope{
		{Channel: e.Channel, Action: removed, ServerSeq: e.ServerSeq, Origin: e.Origin},
		{Channel: e.Channel, Action: set, ServerSeq: e.ServerSeq},
	}
}

// mayRewriteAction says whether an action of type t needs decoding to be
// translated. It errs towards true; false means the bytes go out as they
// are, which keeps streaming (chat/delta, chat/toolCallDelta, terminal/data,
// …) and every action whose shape did not change cheap.
func (c *downgrade) mayRewriteAction(t string, raw []byte) bool {
	switch t {
	case "chat/responsePart":
		// Only an error part, which the reducers ignore anyway.
		return c.f.errorOnTurn && bytes.Contains(raw, []byte(`"error"`))
	case "chat/error", "chat/turnsLoaded":
		return c.f.errorOnTurn
	case "root/terminalsChanged", "terminal/claimed":
		return c.f.terminalExitCode || c.f.claimWithoutChat
	case "annotations/set", "annotations/updated":
		return c.f.annotationTurnID
	case "session/customizationToggled":
		return c.f.enabledFlag
	case "changeset/statusChanged":
		return c.f.noRecomputing && bytes.Contains(raw, []byte(`"recomputing"`))
	case "session/chatAdded", "session/chatUpdated":
		return c.f.noChatExtras && (hasKey(raw, "changes") || hasKey(raw, "movable"))
	case "session/mcpServerStateChanged":
		return c.f.noMcpBlocking && hasKey(raw, "blocking")
	case "root/agentsChanged", "session/customizationsChanged", "session/customizationUpdated", "session/activeClientSet":
		// Rare, and for 0.7.0 every plugin needs its enabled flag.
		return c.f.enabledFlag || c.mayNeedRewrite(raw)
	}
	return false
}

// downAction rewrites a decoded host action for this dialect in place;
// false withholds it.
func (c *downgrade) downAction(t string, a map[string]any) bool {
	switch t {
	case "root/agentsChanged":
		for _, ag := range array(a["agents"]) {
			c.agent(object(ag))
		}
	case "root/terminalsChanged":
		for _, ti := range array(a["terminals"]) {
			c.terminal(object(ti))
		}
	case "session/chatAdded":
		c.chatSummary(object(a["summary"]))
	case "session/chatUpdated":
		// A change of nothing but what this dialect cannot see (changes,
		// movable) is no change to it.
		return !c.emptied(object(a["changes"]), c.chatSummary)
	case "session/customizationsChanged":
		for _, cu := range array(a["customizations"]) {
			c.customization(object(cu))
		}
	case "session/customizationUpdated":
		c.customization(object(a["customization"]))
	case "session/customizationToggled":
		if c.f.enabledFlag {
			a["enabled"] = effectiveEnablement(a["enablement"])
			delete(a, "enablement")
		}
	case "session/mcpServerStateChanged":
		c.mcpState(object(a["state"]))
	case "session/activeClientSet":
		c.activeClient(object(a["activeClient"]))
	case "chat/error":
		if c.f.errorOnTurn {
			if e, ok := object(a["part"])["error"]; ok {
				a["error"] = e
			}
			delete(a, "part")
		}
	case "chat/responsePart":
		// The reducers ignore an error part sent this way (chat/error
		// carries it); 0.7.0 cannot decode one.
		return !c.f.errorOnTurn || object(a["part"])["kind"] != "error"
	case "chat/turnsLoaded":
		for _, tn := range array(a["turns"]) {
			c.turn(object(tn))
		}
	case "changeset/statusChanged":
		c.changesetStatus(a)
	case "terminal/claimed":
		c.claim(object(a["claim"]))
	case "annotations/set":
		c.annotation(object(a["annotation"]))
	case "annotations/updated":
		if c.f.annotationTurnID {
			// Optional here: absent means "unchanged" in both spellings.
			if o, ok := a["origin"]; ok {
				delete(a, "origin")
				if id, ok := object(o)["turnId"]; ok {
					a["turnId"] = id
				}
			}
		}
	}
	return true
}

// emptied applies f to a non-empty object and reports whether that left
// it empty.
func (c *downgrade) emptied(m map[string]any, f func(map[string]any)) bool {
	if len(m) == 0 {
		return false
	}
	f(m)
	return len(m) == 0
}

func (c *downgrade) Notification(method string, params json.RawMessage) (json.RawMessage, bool) {
	if !NotificationKnownTo(method, c.v) {
		return nil, false
	}
	var down func(map[string]any) bool
	switch method {
	case wire.MethodRootSessionAdded:
		down = func(p map[string]any) bool { c.sessionSummary(object(p["summary"])); return true }
	case wire.MethodRootSessionSummaryChanged:
		// A change of nothing but the chat catalogue is no change to a
		// dialect without one.
		down = func(p map[string]any) bool { return !c.emptied(object(p["changes"]), c.sessionSummary) }
	case wire.MethodAuthRequired:
		if !c.f.authResourceURI {
			return params, true
		}
		out, err := c.rewriteStrict(params, func(p map[string]any) bool {
			if r := object(p["resource"]); r != nil {
				p["resource"] = r["resource"]
			}
			return true
		})
		if err != nil {
			return params, true
		}
		return out, true
	default:
		return params, true
	}
	out, err := c.rewrite(params, down)
	if err != nil {
		return params, true
	}
	return out, out != nil
}

func (c *downgrade) Result(method string, result json.RawMessage) (json.RawMessage, *Error) {
	var down func(map[string]any) bool
	switch method {
	case wire.MethodInitialize:
		if !c.f.noInitializeExtras {
			return result, nil
		}
		// Top-level members only: the snapshots inside are the host's
		// calls to Snapshot, already in this dialect.
		var r map[string]json.RawMessage
		if err := json.Unmarshal(result, &r); err != nil {
			return nil, Errorf(wire.CodeInternalError, "translating the initialize result to %s: %v", c.v, err)
		}
		_, meta := r["_meta"]
		_, automations := r["automations"]
		if !meta && !automations {
			return result, nil
		}
		delete(r, "_meta")
		delete(r, "automations")
		out, err := wire.Marshal(r)
		if err != nil {
			return nil, Errorf(wire.CodeInternalError, "translating the initialize result to %s: %v", c.v, err)
		}
		return out, nil
	case wire.MethodListSessions:
		down = func(r map[string]any) bool {
			for _, s := range array(r["items"]) {
				c.sessionSummary(object(s))
			}
			return true
		}
	case wire.MethodResolveSessionConfig:
		down = func(r map[string]any) bool { c.configSchema(object(r["schema"])); return true }
	case InternalFetchTurnsPage:
		if !c.f.errorOnTurn {
			return result, nil
		}
		down = func(r map[string]any) bool {
			for _, t := range array(r["turns"]) {
				c.turn(object(t))
			}
			return true
		}
	default:
		return result, nil
	}
	out, err := c.rewrite(result, down)
	if err != nil {
		return nil, Errorf(wire.CodeInternalError, "translating the %s result to %s: %v", method, c.v, err)
	}
	return out, nil
}

// rewrite applies f to b decoded, when b may need it; JSON that is not an
// object passes through. A nil result (and no error) means f withheld it.
func (c *downgrade) rewrite(b []byte, f func(map[string]any) bool) (json.RawMessage, error) {
	if !c.mayNeedRewrite(b) {
		return b, nil
	}
	return c.rewriteStrict(b, f)
}

// rewriteStrict applies f to b decoded, whatever b holds.
func (c *downgrade) rewriteStrict(b []byte, f func(map[string]any) bool) (json.RawMessage, error) {
	tree, err := decodeTree(b)
	if err != nil {
		return nil, err
	}
	m, ok := tree.(map[string]any)
	if !ok {
		return b, nil
	}
	if !f(m) {
		return nil, nil
	}
	return wire.Marshal(m)
}

// mayNeedRewrite reports whether encoded JSON may hold something this
// dialect lacks or spells differently: absence of every trigger is proof
// (the host's encoder writes names literally), presence merely a reason to
// decode.
func (c *downgrade) mayNeedRewrite(b []byte) bool {
	for _, t := range c.triggers {
		if bytes.Contains(b, t) {
			return true
		}
	}
	return false
}

// unknownAction is the rejection of an action the dialect does not have.
func (c *downgrade) unknownAction(t string) error {
	return fmt.Errorf("unknown action type %q in AHP %s", t, c.v)
}
