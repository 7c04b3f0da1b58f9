package codec

import (
	"encoding/json"
	"strings"

	w3 "github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
	"github.com/ahp-bridge/ahp-bridge/ahp/v070/wire"
)

// v030 serves AHP 0.3.0, whose sessions carry their turns themselves, as a
// projection of each session's default chat onto its session channel
// (docs/protocol-versions.md §3). It projects 0.7.0: it is the second stage
// of the 0.3.0 codec, after the 0.7.0 codec (compose.go), so its Snapshot
// takes ahp/v070/wire states. Every translation is a pure function of its
// input and the Directory, so the host may translate a broadcast once and
// again on replay and get the same bytes.
//
// The files: v030_state.go projects states and nested types,
// v030_down.go translates host envelopes, v030_up.go a 0.3.0 client's
// actions; this file has the commands and notifications.
type v030 struct{ dir Directory }

func newV030(dir Directory) *v030 { return &v030{dir: dir} }

// Members a 0.3.0 translation leaves for the host to complete, because
// only the host knows the connection or the current state.
const (
	// DraftParam is the member of translated createSession params that
	// holds the model and agent a 0.3.0 client created the session with, as
	// a wire.Message (text "", origin user): 0.7.0 createSession has no
	// place for them, and 0.3.0 clients read them back from the default
	// chat's draft. The host removes the member and, once the default chat
	// exists, sets its draft to the message (chat/draftChanged).
	DraftParam = "_ahpBridgeDraft"

	// SenderClientID stands for the clientId of the connection that
	// dispatched a translated action: 0.3.0's session/activeClientChanged
	// {activeClient: null} and session/activeClientToolsChanged name no
	// client, and a codec does not know the connection. The host replaces
	// it with the sender's clientId in session/activeClientRemoved.clientId
	// and session/activeClientSet.activeClient.clientId. In the latter case
	// the action came from activeClientToolsChanged and carries only the
	// new tools: the host completes displayName and customizations from
	// the sender's current entry, and rejects the action when the sender
	// has none (the 0.3.0 reducer ignores it then).
	SenderClientID = "_ahpBridgeSender"

	// SelectionMeta is the draft _meta member that marks a chat/draftChanged
	// translated from 0.3.0's session/modelChanged ("model") or
	// session/agentChanged ("agent"). Such a draft is blank and carries only
	// the selection the 0.3.0 client changed; the host completes it with the
	// other one from the current draft (0.3.0 keeps model and agent
	// independently, a 0.7.0 draft replaces both at once). The mark stays in
	// the draft so that its echo to 0.3.0 starts with the action the client
	// sent, and a 0.3.0 agent clear (no agent, mark "agent") stays a clear.
	SelectionMeta = "ahpBridge/v030Selection"
)

func (c *v030) Version() Version { return V030 }

// Channels maps a 0.3.0 subscription: a session means the session and its
// default chat; chat URIs do not exist in 0.3.0.
func (c *v030) Channels(uri string) []string {
	if strings.HasPrefix(uri, "ahp-chat:") {
		return nil
	}
	if chat, ok := c.dir.DefaultChat(uri); ok {
		return []string{uri, chat}
	}
	return []string{uri}
}

// Snapshot projects the host states of Channels(uri). For a session the
// host should append the session's root catalog entry
// (*wire.SessionSummary) after the channels' states: 0.3.0 sessions show
// createdAt, changes and the catalog's modifiedAt, which neither the
// session nor the chat state holds.
func (c *v030) Snapshot(uri string, states []any) (json.RawMessage, error) {
	var (
		session *wire.SessionState
		chat    *wire.ChatState
		sum     *wire.SessionSummary
		out     any
		err     error
	)
	for _, s := range states {
		switch v := s.(type) {
		case *wire.SessionState:
			session = v
		case *wire.ChatState:
			chat = v
		case *wire.SessionSummary:
			sum = v
		case *wire.RootState:
			out, err = projectRoot(v)
		case *wire.TerminalState:
			out, err = via[*w3.TerminalState](v)
		case *wire.ChangesetState:
			out, err = projectChangeset(v)
		case *wire.ResourceWatchState:
			out, err = via[*w3.ResourceWatchState](v)
		default:
			return nil, Errorf(wire.CodeNotFound, "%s has no AHP 0.3.0 form (%T)", uri, s)
		}
	}
	switch {
	case session != nil:
		out, err = projectSession(uri, session, chat, sum)
	case out == nil:
		return nil, Errorf(wire.CodeInternalError, "no state to project for %s", uri)
	}
	if err != nil {
		return nil, Errorf(wire.CodeInternalError, "projecting %s for AHP 0.3.0: %v", uri, err)
	}
	return w3.Marshal(out)
}

// Notification projects protocol notifications. root/progress (0.5.0) is
// never sent; summaries lose what 0.3.0 does not have and get ms
// timestamps.
func (c *v030) Notification(method string, params json.RawMessage) (json.RawMessage, bool) {
	var out any
	switch method {
	case wire.MethodRootSessionAdded:
		var p wire.SessionAddedParams
		if json.Unmarshal(params, &p) != nil {
			return nil, false
		}
		sum, err := projectSummary(p.Summary)
		if err != nil {
			return nil, false
		}
		out = w3.SessionAddedParams{Channel: p.Channel, Summary: sum}
	case wire.MethodRootSessionSummaryChanged:
		var p wire.SessionSummaryChangedParams
		if json.Unmarshal(params, &p) != nil {
			return nil, false
		}
		ch, ok := summaryChanges(p.Changes)
		if !ok {
			return nil, false
		}
		out = w3.SessionSummaryChangedParams{Channel: p.Channel, Session: p.Session, Changes: ch}
	case wire.MethodRootSessionRemoved:
		var p w3.SessionRemovedParams
		if json.Unmarshal(params, &p) != nil {
			return nil, false
		}
		out = p
	case wire.MethodAuthRequired:
		var p w3.AuthRequiredParams
		if json.Unmarshal(params, &p) != nil {
			return nil, false
		}
		out = p
	case wire.MethodOtlpExportLogs, wire.MethodOtlpExportTraces, wire.MethodOtlpExportMetrics:
		return params, true // same payloads since 0.2.0, open JSON
	default:
		return nil, false
	}
	b, err := w3.Marshal(out)
	return b, err == nil
}

// summaryChanges projects the changed fields of a catalog entry. The
// identity fields (resource, provider, createdAt) are never sent to 0.3.0
// (spec/root-channel.md); an emptied workingDirectories cannot be said in
// 0.3.0 and is left out. ok is false when nothing 0.3.0 knows changed.
func summaryChanges(p wire.PartialSessionSummary) (w3.SessionSummaryChangedParamsChanges, bool) {
	out := w3.SessionSummaryChangedParamsChanges{
		Title:    p.Title,
		Activity: p.Activity,
	}
	if p.Status != nil {
		out.Status = w3.Ptr(w3.SessionStatus(*p.Status))
	}
	if p.ModifiedAt != nil {
		if m, ok := ms(*p.ModifiedAt); ok {
			out.ModifiedAt = &m
		}
	}
	if len(p.WorkingDirectories) > 0 {
		out.WorkingDirectory = &p.WorkingDirectories[0]
	}
	var err error
	if out.Project, err = via[*w3.ProjectInfo](p.Project); err != nil {
		return out, false
	}
	if out.Changes, err = via[*w3.ChangesSummary](p.Changes); err != nil {
		return out, false
	}
	return out, out != (w3.SessionSummaryChangedParamsChanges{})
}

// fetchTurnsPage is the params of InternalFetchTurnsPage.
type fetchTurnsPage struct {
	Channel string  `json:"channel"`
	Before  *string `json:"before,omitempty"`
	Limit   *int    `json:"limit,omitempty"`
}

// Request translates a 0.3.0 request (§3.4). Commands whose params did not
// change pass as they are; the host validates them.
func (c *v030) Request(method string, params json.RawMessage) (string, json.RawMessage, *Error) {
	switch method {
	case wire.MethodCreateChat, wire.MethodDisposeChat:
		return "", nil, Errorf(wire.CodeMethodNotFound, "%s does not exist in AHP 0.3.0", method)
	case wire.MethodCreateSession:
		out, err := createSessionUp(params)
		if err != nil {
			return "", nil, err
		}
		return method, out, nil
	case wire.MethodFetchTurns:
		var p w3.FetchTurnsParams
		if err := json.Unmarshal(params, &p); err != nil {
			return "", nil, Errorf(wire.CodeInvalidParams, "fetchTurns: %v", err)
		}
		if p.Limit != nil && *p.Limit < 0 {
			return "", nil, Errorf(wire.CodeInvalidParams, "fetchTurns: negative limit %d", *p.Limit)
		}
		chat, ok := c.dir.DefaultChat(p.Channel)
		if !ok {
			return "", nil, Errorf(wire.CodeSessionNotFound, "fetchTurns: unknown session %s", p.Channel)
		}
		b, err := json.Marshal(fetchTurnsPage{Channel: chat, Before: p.Before, Limit: p.Limit})
		if err != nil {
			return "", nil, Errorf(wire.CodeInternalError, "fetchTurns: %v", err)
		}
		return InternalFetchTurnsPage, b, nil
	case wire.MethodCompletions:
		var p w3.CompletionsParams
		if err := json.Unmarshal(params, &p); err != nil {
			return "", nil, Errorf(wire.CodeInvalidParams, "completions: %v", err)
		}
		chat, ok := c.dir.DefaultChat(p.Channel)
		if !ok {
			return "", nil, Errorf(wire.CodeSessionNotFound, "completions: unknown session %s", p.Channel)
		}
		p.Channel = chat
		b, err := json.Marshal(p)
		if err != nil {
			return "", nil, Errorf(wire.CodeInternalError, "completions: %v", err)
		}
		return method, b, nil
	case wire.MethodListSessions:
		// 0.3.0's filter has no 0.7.0 counterpart; without paging params the
		// host returns every session, as 0.3.0 expects.
		var p w3.ListSessionsParams
		if err := json.Unmarshal(params, &p); err != nil {
			return "", nil, Errorf(wire.CodeInvalidParams, "listSessions: %v", err)
		}
		b, err := json.Marshal(wire.ListSessionsParams{Channel: p.Channel})
		if err != nil {
			return "", nil, Errorf(wire.CodeInternalError, "listSessions: %v", err)
		}
		return method, b, nil
	}
	return method, params, nil
}

// createSessionUp moves 0.3.0's single workingDirectory into
// workingDirectories and its model/agent into DraftParam.
func createSessionUp(params json.RawMessage) (json.RawMessage, *Error) {
	var p w3.CreateSessionParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, Errorf(wire.CodeInvalidParams, "createSession: %v", err)
	}
	out := wire.CreateSessionParams{Channel: p.Channel, Provider: p.Provider, Config: p.Config}
	if p.WorkingDirectory != nil {
		out.WorkingDirectories = []string{*p.WorkingDirectory}
	}
	var err error
	if out.Fork, err = via[*wire.SessionForkSource](p.Fork); err != nil {
		return nil, Errorf(wire.CodeInvalidParams, "createSession: fork: %v", err)
	}
	if out.ActiveClient, err = via[*wire.SessionActiveClient](p.ActiveClient); err != nil {
		return nil, Errorf(wire.CodeInvalidParams, "createSession: activeClient: %v", err)
	}
	b, err := wire.Marshal(out)
	if err != nil {
		return nil, Errorf(wire.CodeInternalError, "createSession: %v", err)
	}
	if p.Model == nil && p.Agent == nil {
		return b, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, Errorf(wire.CodeInternalError, "createSession: %v", err)
	}
	draft := selectionDraft(upModel(p.Model), upAgent(p.Agent), "")
	if m[DraftParam], err = wire.Marshal(draft); err != nil {
		return nil, Errorf(wire.CodeInternalError, "createSession: %v", err)
	}
	if b, err = json.Marshal(m); err != nil {
		return nil, Errorf(wire.CodeInternalError, "createSession: %v", err)
	}
	return b, nil
}

// Result translates the results whose shapes differ in 0.3.0.
func (c *v030) Result(method string, result json.RawMessage) (json.RawMessage, *Error) {
	var out any
	switch method {
	case InternalFetchTurnsPage:
		var r struct {
			Turns   []wire.Turn `json:"turns"`
			HasMore bool        `json:"hasMore"`
		}
		if err := json.Unmarshal(result, &r); err != nil {
			return nil, Errorf(wire.CodeInternalError, "fetchTurns result: %v", err)
		}
		turns, err := projectTurns(r.Turns)
		if err != nil {
			return nil, Errorf(wire.CodeInternalError, "fetchTurns result: %v", err)
		}
		out = w3.FetchTurnsResult{Turns: turns, HasMore: r.HasMore}
	case wire.MethodListSessions:
		var r wire.ListSessionsResult
		if err := json.Unmarshal(result, &r); err != nil {
			return nil, Errorf(wire.CodeInternalError, "listSessions result: %v", err)
		}
		items := make([]w3.SessionSummary, 0, len(r.Items))
		for _, s := range r.Items {
			p, err := projectSummary(s)
			if err != nil {
				return nil, Errorf(wire.CodeInternalError, "listSessions result: %v", err)
			}
			items = append(items, p)
		}
		out = w3.ListSessionsResult{Items: items}
	case wire.MethodCompletions:
		var r wire.CompletionsResult
		if err := json.Unmarshal(result, &r); err != nil {
			return nil, Errorf(wire.CodeInternalError, "completions result: %v", err)
		}
		for i := range r.Items {
			m := wire.Message{Attachments: []wire.MessageAttachment{r.Items[i].Attachment}}
			fixMessage(&m)
			r.Items[i].Attachment = m.Attachments[0]
		}
		p, err := via[w3.CompletionsResult](r)
		if err != nil {
			return nil, Errorf(wire.CodeInternalError, "completions result: %v", err)
		}
		out = p
	case wire.MethodResolveSessionConfig:
		var r wire.ResolveSessionConfigResult
		if err := json.Unmarshal(result, &r); err != nil {
			return nil, Errorf(wire.CodeInternalError, "resolveSessionConfig result: %v", err)
		}
		fixSessionConfigSchema(&r.Schema)
		p, err := via[w3.ResolveSessionConfigResult](r)
		if err != nil {
			return nil, Errorf(wire.CodeInternalError, "resolveSessionConfig result: %v", err)
		}
		out = p
	case wire.MethodInitialize:
		// The snapshots inside are the host's calls to Snapshot, already in
		// 0.3.0; only the members added in 0.5.2 go.
		var m map[string]json.RawMessage
		if err := json.Unmarshal(result, &m); err != nil {
			return nil, Errorf(wire.CodeInternalError, "initialize result: %v", err)
		}
		delete(m, "serverInfo")
		delete(m, "terminalCommandPrefix")
		out = m
	default:
		return result, nil
	}
	b, err := w3.Marshal(out)
	if err != nil {
		return nil, Errorf(wire.CodeInternalError, "%s result: %v", method, err)
	}
	return b, nil
}
