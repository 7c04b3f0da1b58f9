package codec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ahp-bridge/ahp-bridge/ahp/v070/wire"
)

// chatFamily serves the chat-channel dialects older than 0.7.0 (0.6.0 and
// the 0.5 family) from 0.7.0: the same channels and state model, minus what
// each version does not know and with what it spells differently
// (docs/protocol-versions.md §4). It is the second stage of their codecs,
// after the 0.7.0 codec (compose.go): its Snapshot takes ahp/v070/wire
// states, and everything else it translates is 0.7.0 JSON. Translations are
// stateless: each envelope, state or message is rewritten on its own,
// consulting only the Directory.
//
// Rewrites work on a decoded JSON tree (map[string]any with json.Number),
// not on the wire types: the older shapes (workingDirectory, inputRequests,
// terminalComplete blocks, …) have no wire type, unknown members survive,
// and numbers keep their digits.
type chatFamily struct {
	v   Version
	dir Directory
	f   dialect
	// triggers are the quoted names whose presence in encoded JSON means a
	// nested rewrite of this dialect may apply; JSON without any of them
	// passes through undecoded (mayNeedRewrite).
	triggers [][]byte
}

// dialect lists what one chat-family version lacks or spells differently
// compared with 0.7.0, so that the rewrites read as rules and each
// version's treatment is decided in one place (newChatFamily).
type dialect struct {
	// ≤0.6.0 (§4.2 #1–#7, #21).
	singleWorkingDirectory bool // workingDirectory (the first entry) for workingDirectories; no multipleWorkingDirectories capability
	noSideChats            bool // ChatOrigin "sideChat" and multipleChats.sideChat are unknown
	noChatAttachments      bool // MessageAttachment "chat" is unknown
	stringToolInput        bool // toolInput is a string, never a ContentRef
	requiredDeltaContent   bool // chat/toolCallDelta.content is required
	untypedForkSource      bool // createChat.source is {chat, turnId} without kind

	// Terminal results (§4.2 #8): no version before 0.7.0 knows
	// ToolResultTerminalContent.result; 0.5.2 and 0.6.0 carry it as a
	// separate terminalComplete block.
	terminalCompleteBlocks bool

	// ≤0.5.2 (§4.2 #10–#12).
	inputRequestsOnChat bool // live input requests are ChatState.inputRequests, never unresolved parts
	noAuthRequired      bool // tool call status auth-required and input kind toolAuthentication are unknown

	resolvedInputParts  bool // ≥0.5.2: resolved inputRequest response parts exist
	renamedReviewAction bool // 0.5.2: changeset/filesReviewedChanged {fileIds, reviewed}, server-only
	noMcpStartStop      bool // ≤0.5.1: session/mcpServerStart/StopRequested are unknown
	noHandshakeIdentity bool // ≤0.5.1: initialize has no serverInfo/terminalCommandPrefix

	// 0.5.0 (§4.2 #11, #18, #20, #21).
	noInputNeeded       bool // SessionState.inputNeeded is unknown
	pagedFetchTurns     bool // fetchTurns {before, limit} → {turns, hasMore}; no turnsNextCursor
	unpagedList         bool // listSessions has filter, no limit/cursor/nextCursor
	noAgentCapabilities bool // AgentInfo.capabilities is unknown
}

func newChatFamily(v Version, dir Directory) *chatFamily {
	older := func(major, minor, patch int) bool { return v.Less(Version{major, minor, patch}) }
	f := dialect{
		singleWorkingDirectory: older(0, 7, 0),
		noSideChats:            older(0, 7, 0),
		noChatAttachments:      older(0, 7, 0),
		stringToolInput:        older(0, 7, 0),
		requiredDeltaContent:   older(0, 7, 0),
		untypedForkSource:      older(0, 7, 0),
		terminalCompleteBlocks: !older(0, 5, 2) && older(0, 7, 0),
		inputRequestsOnChat:    older(0, 6, 0),
		noAuthRequired:         older(0, 6, 0),
		resolvedInputParts:     !older(0, 5, 2),
		renamedReviewAction:    v == Version{0, 5, 2},
		noMcpStartStop:         older(0, 5, 2),
		noHandshakeIdentity:    older(0, 5, 2),
		noInputNeeded:          older(0, 5, 1),
		pagedFetchTurns:        older(0, 5, 1),
		unpagedList:            older(0, 5, 1),
		noAgentCapabilities:    older(0, 5, 1),
	}
	// Every dialect before 0.7.0 needs the terminal result rewritten and
	// agent capabilities pruned; the rest depends on the version.
	names := []string{"terminal", "capabilities"}
	if f.singleWorkingDirectory {
		names = append(names, "workingDirectories", "sideChat", "chat", "toolInput")
	}
	if f.inputRequestsOnChat {
		names = append(names, "inputRequest", "auth-required", "toolAuthentication")
	}
	if f.noInputNeeded {
		names = append(names, "inputNeeded", "turnsNextCursor")
	}
	triggers := make([][]byte, len(names))
	for i, n := range names {
		triggers[i] = []byte(`"` + n + `"`)
	}
	return &chatFamily{v: v, dir: dir, f: f, triggers: triggers}
}

func (c *chatFamily) Version() Version { return c.v }

func (c *chatFamily) Channels(uri string) []string { return []string{uri} }

func (c *chatFamily) Snapshot(uri string, states []any) (json.RawMessage, error) {
	if len(states) < 1 {
		return nil, Errorf(wire.CodeInternalError, "a %s snapshot of %s needs a state, got none", c.v, uri)
	}
	// A session's catalogue entry may follow its state (see Codec.Snapshot);
	// the chat dialects' session state does not carry it.
	for _, extra := range states[1:] {
		if _, ok := extra.(*wire.SessionSummary); !ok {
			return nil, Errorf(wire.CodeInternalError, "a %s snapshot of %s got an unexpected %T after its state", c.v, uri, extra)
		}
	}
	var down func(map[string]any)
	switch states[0].(type) {
	case *wire.RootState:
		down = c.root
	case *wire.SessionState:
		down = c.session
	case *wire.ChatState:
		down = c.chat
	case *wire.TerminalState, *wire.ChangesetState, *wire.AnnotationsState, *wire.ResourceWatchState:
		// Nothing these channels carry changed shape since 0.5.0: older
		// clients ignore TerminalState.isPty, and ChangesetFile.reviewed,
		// when present, means to 0.5.2 what it means to 0.7.0. (An absent
		// one reads "review unsupported" to 0.5.2; only the session's
		// changeset list says whether review is supported, which a
		// stateless codec cannot see here.)
	default:
		return nil, Errorf(wire.CodeInternalError, "a %s snapshot of %s cannot be made from a %T", c.v, uri, states[0])
	}
	b, err := wire.Marshal(states[0])
	if err != nil {
		return nil, Errorf(wire.CodeInternalError, "encoding the state of %s: %v", uri, err)
	}
	if down == nil {
		return b, nil
	}
	out, err := c.rewrite(b, down)
	if err != nil {
		return nil, Errorf(wire.CodeInternalError, "translating the state of %s to %s: %v", uri, c.v, err)
	}
	return out, nil
}

func (c *chatFamily) Envelope(e Envelope) []Envelope {
	t := string(actionTypeBytes(e.Action))
	switch {
	case t == "changeset/filesReviewChanged" && c.f.renamedReviewAction,
		(t == "session/mcpServerStartRequested" || t == "session/mcpServerStopRequested") && c.f.noMcpStartStop:
		// Renamed or replaced below rather than withheld.
	case !ActionKnownTo(t, c.v):
		return nil
	}
	if !c.mayRewriteAction(t, e.Action) {
		return []Envelope{e}
	}
	tree, err := decodeTree(e.Action)
	a, ok := tree.(map[string]any)
	if err != nil || !ok {
		// The host encoded it, so this cannot happen; like the pass-through,
		// the codec does not police the host's JSON, only what the version
		// knows.
		return c.untranslated(t, e)
	}
	if !c.downAction(t, a) {
		return nil
	}
	out, err := wire.Marshal(a)
	if err != nil {
		return c.untranslated(t, e)
	}
	e.Action = out
	return []Envelope{e}
}

// untranslated is what Envelope sends when it cannot rewrite an action: the
// action as it is, if the version knows its type.
func (c *chatFamily) untranslated(t string, e Envelope) []Envelope {
	if !ActionKnownTo(t, c.v) {
		return nil
	}
	return []Envelope{e}
}

// mayRewriteAction says whether an action of type t needs decoding to be
// translated. It errs towards true; false means the bytes go out as they
// are, which is what keeps streaming (chat/delta, chat/reasoning, …) cheap.
func (c *chatFamily) mayRewriteAction(t string, raw []byte) bool {
	switch t {
	case "changeset/filesReviewChanged":
		return c.f.renamedReviewAction
	case "session/mcpServerStartRequested", "session/mcpServerStopRequested":
		return c.f.noMcpStartStop
	case "chat/toolCallDelta":
		return c.f.requiredDeltaContent && !hasKey(raw, "content")
	case "root/agentsChanged", "session/chatAdded", "session/chatUpdated", "session/inputNeededSet",
		"chat/turnStarted", "chat/pendingMessageSet", "chat/draftChanged", "chat/responsePart",
		"chat/toolCallReady", "chat/toolCallComplete", "chat/toolCallContentChanged", "chat/turnsLoaded":
		return c.mayNeedRewrite(raw)
	}
	return false
}

// downAction rewrites a decoded host action for this dialect in place; false
// withholds it.
func (c *chatFamily) downAction(t string, a map[string]any) bool {
	switch t {
	case "root/agentsChanged":
		for _, ag := range array(a["agents"]) {
			c.agent(object(ag))
		}
	case "session/chatAdded":
		c.chatSummary(object(a["summary"]))
	case "session/chatUpdated":
		c.chatSummary(object(a["changes"]))
	case "session/inputNeededSet":
		return c.inputNeeded(object(a["request"]))
	case "session/mcpServerStartRequested", "session/mcpServerStopRequested":
		// The older reducers reach the same state from the server's own
		// report (session/reducer.ts@052).
		kind := "starting"
		if t == "session/mcpServerStopRequested" {
			kind = "stopped"
		}
		id := a["id"]
		clear(a)
		a["type"] = "session/mcpServerStateChanged"
		a["id"] = id
		a["state"] = map[string]any{"kind": kind}
	case "chat/turnStarted", "chat/pendingMessageSet":
		c.message(object(a["message"]))
	case "chat/draftChanged":
		c.message(object(a["draft"]))
	case "chat/responsePart":
		part := object(a["part"])
		switch part["kind"] {
		case "inputRequest":
			if !c.f.inputRequestsOnChat {
				break
			}
			if _, resolved := part["response"]; !resolved {
				// A live request is chat/inputRequested to these
				// dialects; their reducers file it under inputRequests.
				req := part["request"]
				clear(a)
				a["type"] = "chat/inputRequested"
				a["request"] = req
				break
			}
			return c.f.resolvedInputParts
		case "toolCall":
			c.toolCall(object(part["toolCall"]))
		}
	case "chat/toolCallDelta":
		if _, ok := a["content"]; !ok && c.f.requiredDeltaContent {
			a["content"] = ""
		}
	case "chat/toolCallReady":
		c.toolInput(a)
	case "chat/toolCallComplete":
		if r := object(a["result"]); r != nil {
			c.toolContent(r)
		}
	case "chat/toolCallContentChanged":
		c.toolContent(a)
	case "chat/turnsLoaded":
		for _, t := range array(a["turns"]) {
			c.turn(object(t), false)
		}
	case "changeset/filesReviewChanged":
		if c.f.renamedReviewAction {
			a["type"] = "changeset/filesReviewedChanged"
			a["fileIds"] = a["files"]
			delete(a, "files")
		}
	}
	return true
}

func (c *chatFamily) Notification(method string, params json.RawMessage) (json.RawMessage, bool) {
	if !NotificationKnownTo(method, c.v) {
		return nil, false
	}
	var down func(map[string]any)
	switch method {
	case "root/sessionAdded":
		down = func(p map[string]any) { c.sessionSummary(object(p["summary"])) }
	case "root/sessionSummaryChanged":
		down = func(p map[string]any) { c.sessionSummary(object(p["changes"])) }
	default:
		return params, true
	}
	out, err := c.rewrite(params, down)
	if err != nil {
		return params, true
	}
	return out, true
}

func (c *chatFamily) Action(channel string, action json.RawMessage) (string, json.RawMessage, error) {
	t := actionType(action)
	if t == "changeset/filesReviewedChanged" && c.f.renamedReviewAction {
		return "", nil, fmt.Errorf("%s is not client-dispatchable in AHP %s", t, c.v)
	}
	if !ActionKnownTo(t, c.v) {
		return "", nil, fmt.Errorf("unknown action type %q in AHP %s", t, c.v)
	}
	if strings.HasPrefix(t, "chat/") {
		// ahpx (0.5.0) dispatches chat actions on the session when it
		// finds no default chat.
		if chat, ok := c.dir.DefaultChat(channel); ok {
			channel = chat
		}
	}
	if c.f.terminalCompleteBlocks && (t == "chat/toolCallComplete" || t == "chat/toolCallContentChanged") &&
		bytes.Contains(action, []byte("terminalComplete")) {
		up := func(a map[string]any) {
			if t == "chat/toolCallComplete" {
				a = object(a["result"])
			}
			c.foldTerminalComplete(a)
		}
		out, err := c.rewriteStrict(action, up)
		if err != nil {
			return "", nil, fmt.Errorf("malformed %s: %v", t, err)
		}
		action = out
	}
	return channel, action, nil
}

func (c *chatFamily) Request(method string, params json.RawMessage) (string, json.RawMessage, *Error) {
	var up func(map[string]any)
	switch {
	case method == "createSession" && c.f.singleWorkingDirectory:
		up = func(p map[string]any) {
			wd, _ := p["workingDirectory"].(string)
			delete(p, "workingDirectory")
			if wd != "" {
				p["workingDirectories"] = []any{wd}
			}
		}
	case method == "createChat" && c.f.untypedForkSource:
		up = func(p map[string]any) {
			if src := object(p["source"]); src != nil {
				if _, ok := src["kind"]; !ok {
					src["kind"] = "fork"
				}
			}
		}
	case method == "listSessions" && c.f.unpagedList:
		// 0.5.0 has a filter no host honours and no paging; without a
		// limit the host returns every session.
		up = func(p map[string]any) {
			for k := range p {
				if k != "channel" {
					delete(p, k)
				}
			}
		}
	case method == "fetchTurns" && c.f.pagedFetchTurns:
		p, err := c.fetchTurnsPage(params)
		if err != nil {
			return "", nil, err
		}
		return InternalFetchTurnsPage, p, nil
	default:
		return method, params, nil
	}
	out, err := c.rewriteStrict(params, up)
	if err != nil {
		return "", nil, Errorf(wire.CodeInvalidParams, "%s: %v", method, err)
	}
	return method, out, nil
}

// fetchTurnsPage turns 0.5.0's fetchTurns {channel, before?, limit?} into
// the params of InternalFetchTurnsPage. ahpx names the session, meaning its
// default chat.
func (c *chatFamily) fetchTurnsPage(params json.RawMessage) (json.RawMessage, *Error) {
	var p struct {
		Channel string          `json:"channel"`
		Before  *string         `json:"before,omitempty"`
		Limit   json.RawMessage `json:"limit,omitempty"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, Errorf(wire.CodeInvalidParams, "fetchTurns: params are not {channel, before?, limit?}: %v", err)
	}
	if chat, ok := c.dir.DefaultChat(p.Channel); ok {
		p.Channel = chat
	}
	out, err := wire.Marshal(p)
	if err != nil {
		return nil, Errorf(wire.CodeInternalError, "fetchTurns: %v", err)
	}
	return out, nil
}

func (c *chatFamily) Result(method string, result json.RawMessage) (json.RawMessage, *Error) {
	var down func(map[string]any)
	switch method {
	case "initialize":
		if !c.f.noHandshakeIdentity || !hasKey(result, "serverInfo") && !hasKey(result, "terminalCommandPrefix") {
			return result, nil
		}
		down = func(r map[string]any) {
			delete(r, "serverInfo")
			delete(r, "terminalCommandPrefix")
		}
	case "listSessions":
		if !c.mayNeedRewrite(result) && !(c.f.unpagedList && hasKey(result, "nextCursor")) {
			return result, nil
		}
		down = func(r map[string]any) {
			for _, s := range array(r["items"]) {
				c.sessionSummary(object(s))
			}
			if c.f.unpagedList {
				delete(r, "nextCursor")
			}
		}
	case InternalFetchTurnsPage:
		if !c.mayNeedRewrite(result) {
			return result, nil
		}
		down = func(r map[string]any) {
			for _, t := range array(r["turns"]) {
				c.turn(object(t), false)
			}
		}
	case "completions":
		if !c.mayNeedRewrite(result) {
			return result, nil
		}
		down = func(r map[string]any) {
			for _, it := range array(r["items"]) {
				if it := object(it); it != nil {
					if at := object(it["attachment"]); at != nil {
						it["attachment"] = c.attachment(at)
					}
				}
			}
		}
	default:
		return result, nil
	}
	out, err := c.rewriteStrict(result, down)
	if err != nil {
		return nil, Errorf(wire.CodeInternalError, "translating the %s result to %s: %v", method, c.v, err)
	}
	return out, nil
}

// rewrite applies f to b decoded, when b may need it; JSON that is not an
// object passes through.
func (c *chatFamily) rewrite(b []byte, f func(map[string]any)) (json.RawMessage, error) {
	if !c.mayNeedRewrite(b) {
		return b, nil
	}
	return c.rewriteStrict(b, f)
}

// rewriteStrict applies f to b decoded, whatever b holds.
func (c *chatFamily) rewriteStrict(b []byte, f func(map[string]any)) (json.RawMessage, error) {
	tree, err := decodeTree(b)
	if err != nil {
		return nil, err
	}
	m, ok := tree.(map[string]any)
	if !ok {
		return b, nil
	}
	f(m)
	return wire.Marshal(m)
}

// mayNeedRewrite reports whether encoded JSON may hold something this
// dialect spells differently. It looks for the quoted names (keys or
// values) that every such shape contains; the host's encoder writes them
// literally, so absence is proof and presence merely a reason to decode.
func (c *chatFamily) mayNeedRewrite(b []byte) bool {
	for _, t := range c.triggers {
		if bytes.Contains(b, t) {
			return true
		}
	}
	return false
}
