package host

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
)

// handleFrame processes one incoming frame. It never panics on bad input:
// every malformed request gets a JSON-RPC error and the connection stays
// open.
func (h *Host) handleFrame(ctx context.Context, c *conn, frame []byte) {
	defer func() {
		if r := recover(); r != nil {
			h.stats.panics.Add(1)
			c.log.Error().Interface("panic", r).Msg("internal error while handling a message")
			h.queue(c, encodeError(nil, &Error{Code: CodeInternalError, Message: fmt.Sprintf("internal error: %v", r)}))
		}
	}()
	m, id, perr := parseFrame(frame)
	if perr != nil {
		h.queue(c, encodeError(id, perr))
		return
	}
	switch m.kind {
	case kindResponse:
		// The host sends no requests; a stray response is ignored.
		c.log.Debug().RawJSON("id", m.id).Msg("ignoring a response to a request the server never sent")
		return
	case kindNotification:
		h.handleNotification(c, m)
		return
	}
	h.handleRequest(ctx, c, m)
}

func (h *Host) reply(c *conn, id json.RawMessage, result any, err *Error) {
	if err != nil {
		h.queue(c, encodeError(id, err))
		return
	}
	frame, eerr := encodeResponse(id, result)
	if eerr != nil {
		h.queue(c, encodeError(id, &Error{Code: CodeInternalError, Message: eerr.Error()}))
		return
	}
	h.queue(c, frame)
}

func (h *Host) handleNotification(c *conn, m *inMessage) {
	h.mu.Lock()
	ready := c.initialized
	h.mu.Unlock()
	switch m.method {
	case "dispatchAction":
		if !ready {
			c.log.Debug().Msg("dropping dispatchAction sent before initialize")
			return
		}
		h.dispatchAction(c, m.params)
	case "unsubscribe":
		ch, perr := channelParam(m.params)
		if perr != nil {
			c.log.Debug().Str("error", perr.Message).Msg("ignoring a malformed unsubscribe")
			return
		}
		h.mu.Lock()
		if sc, ok := c.subs[ch]; ok {
			delete(sc.subs, c)
			delete(c.subs, ch)
		}
		h.mu.Unlock()
	default:
		c.log.Debug().Str("method", m.method).Msg("ignoring an unknown notification")
	}
}

// knownRequests are the request methods this host implements.
var knownRequests = map[string]bool{
	"ping": true, "initialize": true, "reconnect": true, "subscribe": true, "createSession": true,
	"disposeSession": true, "listSessions": true, "fetchTurns": true, "completions": true,
	"resourceRead": true, "resolveSessionConfig": true,
}

// notificationMethods are the client notifications this host implements.
var notificationMethods = map[string]bool{"dispatchAction": true, "unsubscribe": true}

// handshakeFree are the requests allowed before initialize.
var handshakeFree = map[string]bool{"initialize": true, "reconnect": true, "ping": true}

func (h *Host) handleRequest(ctx context.Context, c *conn, m *inMessage) {
	if m.method == "ping" {
		h.reply(c, m.id, struct{}{}, nil)
		return
	}
	if notificationMethods[m.method] {
		// dispatchAction and unsubscribe are notifications in AHP; a client
		// that sends them as requests still gets them done, and an empty
		// answer so it is not left waiting.
		h.handleNotification(c, m)
		h.reply(c, m.id, nil, nil)
		return
	}
	if !knownRequests[m.method] {
		h.reply(c, m.id, nil, Errorf(CodeMethodNotFound, "method not found: %s is not supported by this server", m.method))
		return
	}
	channel, perr := channelParam(m.params)
	if perr != nil {
		h.reply(c, m.id, nil, perr)
		return
	}
	h.mu.Lock()
	ready := c.initialized
	h.mu.Unlock()
	if !ready && !handshakeFree[m.method] {
		h.reply(c, m.id, nil, Errorf(CodeInvalidRequest, "the connection is not initialized: send initialize (or reconnect) before %s", m.method))
		return
	}
	switch m.method {
	case "initialize":
		h.initialize(c, m)
	case "reconnect":
		h.reconnect(c, m)
	case "subscribe":
		h.subscribe(c, m, channel)
	case "createSession":
		h.createSession(ctx, c, m, channel)
	case "disposeSession":
		h.disposeSession(ctx, c, m, channel)
	case "listSessions":
		h.reply(c, m.id, wire.ListSessionsResult{Items: h.listSessions()}, nil)
	case "fetchTurns":
		res, err := h.fetchTurns(m)
		h.reply(c, m.id, res, err)
	case "completions":
		h.completions(ctx, c, m, channel)
	case "resourceRead":
		h.resourceRead(ctx, c, m)
	case "resolveSessionConfig":
		h.resolveSessionConfig(ctx, c, m)
	}
}

// initialize negotiates the protocol version and sends initial snapshots.
func (h *Host) initialize(c *conn, m *inMessage) {
	var p wire.InitializeParams
	if err := decodeParams("initialize", m.params, &p); err != nil {
		h.reply(c, m.id, nil, err)
		return
	}
	if p.ClientID == "" {
		h.reply(c, m.id, nil, Errorf(CodeInvalidParams, "invalid params for initialize: clientId is required"))
		return
	}
	h.mu.Lock()
	already := c.initialized
	h.mu.Unlock()
	if already {
		h.reply(c, m.id, nil, Errorf(CodeInvalidRequest, "the connection is already initialized"))
		return
	}
	version := negotiate(p.ProtocolVersions)
	if version == "" {
		e := &Error{
			Code: CodeUnsupportedProtocolVersion,
			Message: fmt.Sprintf("unsupported protocol version: the client offered [%s], this server speaks [%s]",
				strings.Join(p.ProtocolVersions, ", "), strings.Join(supportedVersions, ", ")),
			Data: wire.UnsupportedProtocolVersionErrorData{SupportedVersions: slices.Clone(supportedVersions)},
		}
		c.log.Warn().Strs("offered", p.ProtocolVersions).Msg("protocol negotiation failed; closing the connection")
		c.sendAndClose(encodeError(m.id, e), "protocol version negotiation failed")
		return
	}
	h.mu.Lock()
	c.initialized, c.clientID, c.version, c.codec = true, p.ClientID, version, codecFor(version)
	h.mu.Unlock()
	c.log.Debug().Str("client", p.ClientID).Str("version", version).Msg("client initialized")

	c.hold()
	snaps := h.subscribeAll(c, p.InitialSubscriptions)
	h.mu.Lock()
	seq := h.seq
	h.mu.Unlock()
	res := struct {
		ProtocolVersion             string        `json:"protocolVersion"`
		ServerSeq                   int64         `json:"serverSeq"`
		Snapshots                   []snapshotOut `json:"snapshots"`
		DefaultDirectory            string        `json:"defaultDirectory,omitempty"`
		CompletionTriggerCharacters []string      `json:"completionTriggerCharacters,omitzero"`
	}{version, seq, snaps, h.opts.DefaultDirectory, h.opts.CompletionTriggerCharacters}
	frame, err := encodeResponse(m.id, res)
	if err != nil {
		frame = encodeError(m.id, &Error{Code: CodeInternalError, Message: err.Error()})
	}
	h.stats.queued.Add(1)
	c.release(forConn(c, frame))
}

// negotiate picks the first version in the client's preference order that
// this host implements.
func negotiate(offered []string) string {
	for _, v := range offered {
		if slices.Contains(supportedVersions, v) {
			return v
		}
	}
	return ""
}

// subscribeAll snapshots and subscribes to every known channel in uris;
// unknown ones are skipped (and logged).
func (h *Host) subscribeAll(c *conn, uris []string) []snapshotOut {
	snaps := []snapshotOut{}
	seen := map[string]bool{}
	for _, uri := range uris {
		if seen[uri] {
			continue
		}
		seen[uri] = true
		ch := h.lookup(uri)
		if ch == nil {
			c.log.Debug().Str("channel", uri).Msg("skipping a subscription to an unknown channel")
			continue
		}
		s, err := h.snapshotAndSubscribe(c, ch)
		if err != nil {
			c.log.Debug().Str("channel", uri).Str("error", err.Message).Msg("skipping a subscription")
			continue
		}
		snaps = append(snaps, *s)
	}
	return snaps
}

// reconnect replays missed envelopes from the ring, or sends fresh
// snapshots when the gap cannot be replayed.
func (h *Host) reconnect(c *conn, m *inMessage) {
	var p wire.ReconnectParams
	if err := decodeParams("reconnect", m.params, &p); err != nil {
		h.reply(c, m.id, nil, err)
		return
	}
	if p.ClientID == "" {
		h.reply(c, m.id, nil, Errorf(CodeInvalidParams, "invalid params for reconnect: clientId is required"))
		return
	}
	h.mu.Lock()
	if !c.initialized {
		c.initialized, c.clientID, c.version, c.codec = true, p.ClientID, ProtocolVersion030, baseline
	}
	if h.ring.canReplayFrom(p.LastSeenServerSeq, h.seq) {
		// Replay under the sequencer lock: nothing can be sequenced between
		// collecting the envelopes, subscribing and queueing the reply.
		missing := []string{}
		want := map[string]bool{}
		for _, uri := range p.Subscriptions {
			ch := h.channels[uri]
			if ch == nil {
				if !slices.Contains(missing, uri) {
					missing = append(missing, uri)
				}
				continue
			}
			want[uri] = true
			if _, ok := c.subs[uri]; !ok && len(c.subs) < h.opts.MaxSubscriptionsPerConn {
				ch.subs[c] = struct{}{}
				c.subs[uri] = ch
			}
		}
		actions := []json.RawMessage{}
		h.ring.after(p.LastSeenServerSeq, func(e *ringEntry) {
			if want[e.channel] {
				actions = append(actions, e.env)
			}
		})
		res := struct {
			Type    wire.ReconnectResultType `json:"type"`
			Actions []json.RawMessage        `json:"actions"`
			Missing []string                 `json:"missing"`
		}{wire.ReconnectResultTypeReplay, actions, missing}
		frame, err := encodeResponse(m.id, res)
		if err != nil {
			frame = encodeError(m.id, &Error{Code: CodeInternalError, Message: err.Error()})
		}
		h.queue(c, frame)
		h.mu.Unlock()
		return
	}
	h.mu.Unlock()
	c.hold()
	snaps := h.subscribeAll(c, p.Subscriptions)
	res := struct {
		Type      wire.ReconnectResultType `json:"type"`
		Snapshots []snapshotOut            `json:"snapshots"`
	}{wire.ReconnectResultTypeSnapshot, snaps}
	frame, err := encodeResponse(m.id, res)
	if err != nil {
		frame = encodeError(m.id, &Error{Code: CodeInternalError, Message: err.Error()})
	}
	h.stats.queued.Add(1)
	c.release(forConn(c, frame))
}

func (h *Host) subscribe(c *conn, m *inMessage, uri string) {
	ch := h.lookup(uri)
	if ch == nil {
		h.reply(c, m.id, nil, notFoundError(uri))
		return
	}
	c.hold()
	snap, err := h.snapshotAndSubscribe(c, ch)
	var frame []byte
	if err != nil {
		frame = encodeError(m.id, err)
	} else {
		var eerr error
		frame, eerr = encodeResponse(m.id, struct {
			Snapshot *snapshotOut `json:"snapshot"`
		}{snap})
		if eerr != nil {
			frame = encodeError(m.id, &Error{Code: CodeInternalError, Message: eerr.Error()})
		}
	}
	h.stats.queued.Add(1)
	c.release(forConn(c, frame))
}

// dispatchAction handles a client's write-ahead action.
func (h *Host) dispatchAction(c *conn, params []byte) {
	var p struct {
		Channel   string          `json:"channel"`
		ClientSeq int64           `json:"clientSeq"`
		Action    json.RawMessage `json:"action"`
	}
	if err := json.Unmarshal(params, &p); err != nil || p.Channel == "" {
		// Without a channel and clientSeq there is nobody to echo to.
		c.log.Debug().Msg("dropping a malformed dispatchAction (no channel or clientSeq)")
		return
	}
	ch := h.lookup(p.Channel)
	if ch == nil {
		return // spec: actions for unknown channels are silently ignored
	}
	h.mu.Lock()
	origin := &wire.ActionOrigin{ClientID: c.clientID, ClientSeq: p.ClientSeq}
	h.mu.Unlock()
	var a wire.StateAction
	if err := json.Unmarshal(p.Action, &a); err != nil {
		h.reject(c, p.Channel, p.Action, origin, "malformed action: "+err.Error())
		return
	}
	if a.Value == nil {
		h.reject(c, p.Channel, p.Action, origin, "the action is missing")
		return
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.removed {
		return
	}
	if reason := validateClient(ch, a, p.Action, origin.ClientID); reason != "" {
		h.reject(c, p.Channel, p.Action, origin, reason)
		return
	}
	if ch.kind == chanSession && ch.session.ActiveTurn != nil {
		switch a.Value.(type) {
		case *wire.SessionModelChangedAction, *wire.SessionAgentChangedAction:
			// Applied when the active turn ends (spec: defer until the turn
			// completes, then apply it for the next turn).
			ch.deferred = append(ch.deferred, deferredAction{action: a, raw: p.Action, origin: *origin, sender: c})
			return
		}
	}
	if _, err := h.applyLocked(ch, a, origin, c); err != nil {
		h.reject(c, p.Channel, p.Action, origin, err.Error())
		return
	}
	h.handoff(ch, a, *origin)
	h.settleLocked(ch)
}

// createSession adds a session in the `creating` lifecycle, announces it
// and asks the backend to start it.
func (h *Host) createSession(ctx context.Context, c *conn, m *inMessage, uri string) {
	var p wire.CreateSessionParams
	if err := decodeParams("createSession", m.params, &p); err != nil {
		h.reply(c, m.id, nil, err)
		return
	}
	if !strings.HasPrefix(uri, "ahp-session:/") || len(uri) <= len("ahp-session:/") {
		h.reply(c, m.id, nil, Errorf(CodeInvalidParams, "invalid params for createSession: channel must be an ahp-session:/<id> URI, got %q", uri))
		return
	}
	if p.Fork != nil {
		h.reply(c, m.id, nil, Errorf(CodeInvalidParams, "forking sessions is not supported by this server"))
		return
	}
	provider, perr := h.pickProvider(p.Provider)
	if perr != nil {
		h.reply(c, m.id, nil, perr)
		return
	}
	h.mu.Lock()
	clientID := c.clientID
	h.mu.Unlock()
	if p.ActiveClient != nil && p.ActiveClient.ClientID != clientID {
		h.reply(c, m.id, nil, Errorf(CodeInvalidParams, "activeClient.clientId must be this connection's clientId %q", clientID))
		return
	}
	now := h.opts.Clock()
	st := &wire.SessionState{
		Summary: wire.SessionSummary{
			Resource:         uri,
			Provider:         provider,
			Title:            "",
			Status:           wire.SessionStatusIdle,
			CreatedAt:        now,
			ModifiedAt:       now,
			Model:            p.Model,
			Agent:            p.Agent,
			WorkingDirectory: p.WorkingDirectory,
		},
		Lifecycle:    wire.SessionLifecycleCreating,
		Turns:        []wire.Turn{},
		ActiveClient: p.ActiveClient,
	}
	cfg := h.resolveConfig(ctx, provider, p.Config)
	st.Config = &cfg
	ch := newChannel(uri, chanSession)
	ch.session = st
	h.mu.Lock()
	if _, exists := h.channels[uri]; exists {
		h.mu.Unlock()
		h.reply(c, m.id, nil, Errorf(CodeSessionAlreadyExists, "session %s already exists", uri))
		return
	}
	n := 0
	for _, o := range h.channels {
		if o.kind == chanSession {
			n++
		}
	}
	if n >= h.opts.MaxSessions {
		h.mu.Unlock()
		h.reply(c, m.id, nil, Errorf(CodeInternalError, "session limit reached: this server allows at most %d sessions", h.opts.MaxSessions))
		return
	}
	h.channels[uri] = ch
	summary := st.Summary
	h.broadcastRootLocked("root/sessionAdded", wire.SessionAddedParams{Channel: RootURI, Summary: summary})
	h.mu.Unlock()
	h.reply(c, m.id, nil, nil)
	h.updateActiveSessions()
	if h.backend != nil {
		h.backend.CreateSession(h.ctx, uri, p)
	}
}

func (h *Host) disposeSession(ctx context.Context, c *conn, m *inMessage, uri string) {
	ch := h.lookup(uri)
	if ch == nil || ch.kind != chanSession {
		h.reply(c, m.id, nil, Errorf(CodeSessionNotFound, "session %s does not exist", uri))
		return
	}
	h.removeChannel(ch)
	h.mu.Lock()
	h.broadcastRootLocked("root/sessionRemoved", wire.SessionRemovedParams{Channel: RootURI, Session: uri})
	h.mu.Unlock()
	h.updateActiveSessions()
	if h.backend != nil {
		h.backend.DisposeSession(h.ctx, uri)
	}
	h.reply(c, m.id, nil, nil)
}

// listSessions returns every live session's summary, oldest first.
func (h *Host) listSessions() []wire.SessionSummary {
	h.mu.Lock()
	var chans []*channel
	for _, ch := range h.channels {
		if ch.kind == chanSession {
			chans = append(chans, ch)
		}
	}
	h.mu.Unlock()
	items := make([]wire.SessionSummary, 0, len(chans))
	for _, ch := range chans {
		ch.mu.Lock()
		if !ch.removed {
			items = append(items, ch.session.Summary)
		}
		ch.mu.Unlock()
	}
	sort.Slice(items, func(i, j int) bool {
		if items[i].CreatedAt != items[j].CreatedAt {
			return items[i].CreatedAt < items[j].CreatedAt
		}
		return items[i].Resource < items[j].Resource
	})
	return items
}

// fetchTurns pages completed turns, newest page first, oldest-first within.
func (h *Host) fetchTurns(m *inMessage) (*wire.FetchTurnsResult, *Error) {
	var p wire.FetchTurnsParams
	if err := decodeParams("fetchTurns", m.params, &p); err != nil {
		return nil, err
	}
	limit := DefaultFetchTurnsLimit
	if p.Limit != nil {
		if *p.Limit < 0 {
			return nil, Errorf(CodeInvalidParams, "invalid params for fetchTurns: limit must not be negative")
		}
		if *p.Limit > 0 {
			limit = min(*p.Limit, MaxFetchTurnsLimit)
		}
	}
	var res *wire.FetchTurnsResult
	var rerr *Error
	ok := h.ReadSession(p.Channel, func(st *wire.SessionState) {
		end := len(st.Turns)
		if p.Before != nil {
			end = -1
			for i, t := range st.Turns {
				if t.ID == *p.Before {
					end = i
					break
				}
			}
			if end < 0 {
				rerr = Errorf(CodeInvalidParams, "invalid params for fetchTurns: turn %s is not in session %s", *p.Before, p.Channel)
				return
			}
		}
		start := max(0, end-limit)
		// Deep-copy through JSON so the result does not alias live state.
		b, err := json.Marshal(st.Turns[start:end])
		if err != nil {
			rerr = &Error{Code: CodeInternalError, Message: err.Error()}
			return
		}
		var turns []wire.Turn
		if err := json.Unmarshal(b, &turns); err != nil {
			rerr = &Error{Code: CodeInternalError, Message: err.Error()}
			return
		}
		if turns == nil {
			turns = []wire.Turn{}
		}
		res = &wire.FetchTurnsResult{Turns: turns, HasMore: start > 0}
	})
	if !ok {
		return nil, Errorf(CodeSessionNotFound, "session %s does not exist", p.Channel)
	}
	return res, rerr
}

// completions asks the backend asynchronously so a slow answer does not
// hold up the connection's other requests.
func (h *Host) completions(ctx context.Context, c *conn, m *inMessage, uri string) {
	var p wire.CompletionsParams
	if err := decodeParams("completions", m.params, &p); err != nil {
		h.reply(c, m.id, nil, err)
		return
	}
	if h.lookup(uri) == nil {
		h.reply(c, m.id, nil, notFoundError(uri))
		return
	}
	if h.backend == nil {
		h.reply(c, m.id, wire.CompletionsResult{Items: []wire.CompletionItem{}}, nil)
		return
	}
	if !h.startRequest(c, m.id, "completions") {
		return
	}
	go func() {
		defer h.endRequest(c)
		defer h.recoverRequest(c, m.id, "completions")
		res, err := h.backend.Completions(ctx, p)
		if err != nil {
			h.reply(c, m.id, nil, asRPCError(err))
			return
		}
		if res.Items == nil {
			res.Items = []wire.CompletionItem{}
		}
		h.reply(c, m.id, res, nil)
	}()
}

func (h *Host) resourceRead(ctx context.Context, c *conn, m *inMessage) {
	var p wire.ResourceReadParams
	if err := decodeParams("resourceRead", m.params, &p); err != nil {
		h.reply(c, m.id, nil, err)
		return
	}
	if p.URI == "" {
		h.reply(c, m.id, nil, Errorf(CodeInvalidParams, "invalid params for resourceRead: uri is required"))
		return
	}
	if h.backend == nil {
		h.reply(c, m.id, nil, Errorf(CodeNotFound, "%s not found", p.URI))
		return
	}
	if !h.startRequest(c, m.id, "resourceRead") {
		return
	}
	go func() {
		defer h.endRequest(c)
		defer h.recoverRequest(c, m.id, "resourceRead")
		res, err := h.backend.ResourceRead(ctx, p)
		if err != nil {
			h.reply(c, m.id, nil, asRPCError(err))
			return
		}
		h.reply(c, m.id, res, nil)
	}()
}

// startRequest admits one more asynchronous request of c, or answers it
// with an error when c already has MaxPendingRequests of them running.
// Every admitted request must call endRequest.
func (h *Host) startRequest(c *conn, id json.RawMessage, method string) bool {
	if n := c.pending.Add(1); int(n) > h.opts.MaxPendingRequests {
		c.pending.Add(-1)
		c.log.Warn().Str("method", method).Int("limit", h.opts.MaxPendingRequests).Msg("refused a request: too many pending requests")
		h.reply(c, id, nil, Errorf(CodeInternalError,
			"too many pending requests: a connection may have at most %d completions or resourceRead requests unanswered; wait for some answers first",
			h.opts.MaxPendingRequests))
		return false
	}
	c.reqWG.Add(1)
	return true
}

func (h *Host) endRequest(c *conn) {
	if c.pending.Add(-1) == 0 {
		c.qmu.Lock()
		if c.idle != nil {
			select {
			case c.idle <- struct{}{}:
			default:
			}
		}
		c.qmu.Unlock()
	}
	c.reqWG.Done()
}

func (h *Host) recoverRequest(c *conn, id json.RawMessage, method string) {
	if r := recover(); r != nil {
		c.log.Error().Interface("panic", r).Str("method", method).Msg("the backend panicked")
		h.reply(c, id, nil, Errorf(CodeInternalError, "internal error in %s", method))
	}
}

// releaseActiveClient clears the active-client role of sessions held by a
// client whose last connection ended (spec: the server SHOULD do so).
func (h *Host) releaseActiveClient(clientID string) {
	h.mu.Lock()
	var chans []*channel
	for _, ch := range h.channels {
		if ch.kind == chanSession {
			chans = append(chans, ch)
		}
	}
	h.mu.Unlock()
	for _, ch := range chans {
		ch.mu.Lock()
		if !ch.removed && ch.session.ActiveClient != nil && ch.session.ActiveClient.ClientID == clientID {
			if _, err := h.applyLocked(ch, wire.Action(&wire.SessionActiveClientChangedAction{}), nil, nil); err != nil {
				h.log.Error().Err(err).Msg("failed to release the active client")
			}
		}
		ch.mu.Unlock()
	}
}

// resolveConfig is the initial config of a new session: the backend's
// schema for the provider when it can describe one, with the values the
// client asked for laid over the backend's defaults. Every session has a
// config, so that session/configChanged always has values to merge into.
func (h *Host) resolveConfig(ctx context.Context, provider string, requested map[string]any) wire.SessionConfigState {
	cfg := wire.SessionConfigState{
		Schema: wire.SessionConfigSchema{Type: "object", Properties: map[string]wire.SessionConfigPropertySchema{}},
		Values: map[string]any{},
	}
	if r, ok := h.backend.(ConfigResolver); ok {
		cfg = r.ResolveSessionConfig(ctx, provider)
		if cfg.Schema.Properties == nil {
			cfg.Schema.Properties = map[string]wire.SessionConfigPropertySchema{}
		}
		if cfg.Schema.Type == "" {
			cfg.Schema.Type = "object"
		}
		if cfg.Values == nil {
			cfg.Values = map[string]any{}
		}
	}
	for k, v := range requested {
		cfg.Values[k] = v
	}
	return cfg
}

// resolveSessionConfig answers the root command of the same name.
func (h *Host) resolveSessionConfig(ctx context.Context, c *conn, m *inMessage) {
	var p wire.ResolveSessionConfigParams
	if err := decodeParams("resolveSessionConfig", m.params, &p); err != nil {
		h.reply(c, m.id, nil, err)
		return
	}
	provider, perr := h.pickProvider(p.Provider)
	if perr != nil && p.Provider != nil && *p.Provider != "" {
		h.reply(c, m.id, nil, perr)
		return
	}
	cfg := h.resolveConfig(ctx, provider, p.Config)
	// The result is the session's config state by another name; a
	// conversion (staticcheck S1016) stops compiling if the two ever differ.
	h.reply(c, m.id, wire.ResolveSessionConfigResult(cfg), nil)
}

// pickProvider returns the provider a command names, or the first agent of
// the root state when it names none.
func (h *Host) pickProvider(requested *string) (string, *Error) {
	var providers []string
	h.ReadRoot(func(r *wire.RootState) {
		for _, a := range r.Agents {
			providers = append(providers, a.Provider)
		}
	})
	switch {
	case requested != nil && *requested != "":
		if !slices.Contains(providers, *requested) {
			return "", Errorf(CodeProviderNotFound, "no agent for provider %q; this server has [%s]", *requested, strings.Join(providers, ", "))
		}
		return *requested, nil
	case len(providers) > 0:
		return providers[0], nil
	default:
		return "", Errorf(CodeProviderNotFound, "no agent providers are configured on this server")
	}
}
