package host

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/ahp-bridge/ahp-bridge/ahp/codec"
	"github.com/ahp-bridge/ahp-bridge/ahp/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// reservedSchemes are URI schemes that name other kinds of channels, so a
// session may not take them (agenthost-terminal: is VS Code's name for the
// terminals its clients create).
var reservedSchemes = []string{"ahp-root:", "ahp-chat:", "ahp-terminal:", "agenthost-terminal:", "ahp-resource-watch:", "ahp-changeset:"}

// validSessionURI reports whether uri can name a session: any
// "scheme:/path" URI (clients use ahp-session:/<uuid>, ahpx and VS Code
// <provider>:/<uuid>) except the schemes of other channel kinds.
func validSessionURI(uri string) bool {
	i := strings.Index(uri, ":/")
	if i <= 0 || len(uri) <= i+2 {
		return false
	}
	for _, r := range reservedSchemes {
		if strings.HasPrefix(uri, r) {
			return false
		}
	}
	return !strings.ContainsAny(uri, " \t\r\n")
}

// createSession adds a session in the `creating` lifecycle, with its
// default chat, announces it and asks the handler to start it.
func (h *Host) createSession(ctx context.Context, r *request, uri string) {
	var p wire.CreateSessionParams
	if err := decodeParams("createSession", r.params, &p); err != nil {
		h.reply(r, nil, err)
		return
	}
	var extra map[string]json.RawMessage
	_ = json.Unmarshal(r.params, &extra) // decodeParams accepted the object
	var draft *wire.Message
	if b, ok := extra[codec.DraftParam]; ok {
		// A codec's first draft for the default chat: the model and agent
		// a 0.3.0 client created the session with.
		if err := json.Unmarshal(b, &draft); err != nil {
			h.reply(r, nil, Errorf(CodeInvalidParams, "invalid params for createSession: %v", err))
			return
		}
	}
	if !validSessionURI(uri) {
		h.reply(r, nil, Errorf(CodeInvalidParams, "invalid params for createSession: channel must be a session URI such as ahp-session:/<id>, got %q", uri))
		return
	}
	unclaim, err := h.claimNew(uri) // holders.go: a stored session another bridge drives
	if err != nil {
		h.reply(r, nil, Errorf(CodeInvalidParams, "invalid params for createSession: %v", err))
		return
	}
	// A creation refused below leaves no session behind, so it must not
	// leave a hold either (another bridge could never create or take the
	// URI while this one runs), and the hold goes before the refusal is
	// sent, so that the client may try again at once.
	refuse := func(err *Error) {
		unclaim()
		h.reply(r, nil, err)
	}
	if _, fork := extra["fork"]; fork {
		// 1.0 dropped createSession.fork; older codecs refuse it too, and a
		// 1.x client that still sends it must not see it silently ignored.
		refuse(Errorf(CodeInvalidParams, "invalid params for createSession: forking sessions is not supported (use createChat with a fork source where the agent advertises it)"))
		return
	}
	provider, agent, perr := h.pickProvider(p.Provider)
	if perr != nil {
		refuse(perr)
		return
	}
	if aerr := h.authGate(provider); aerr != nil { // auth.go
		refuse(aerr)
		return
	}
	clientID := r.c.clientIDLocked()
	if p.ActiveClient != nil && p.ActiveClient.ClientID != clientID {
		refuse(Errorf(CodeInvalidParams, "activeClient.clientId must be this connection's clientId %q", clientID))
		return
	}
	for _, d := range p.WorkingDirectories {
		if !absoluteDir(d) {
			refuse(Errorf(CodeInvalidParams, "invalid params for createSession: working directory %q must be an absolute path or a file:// URI of this machine", d))
			return
		}
	}
	dirs := p.WorkingDirectories
	if len(dirs) > 1 && (agent.Capabilities == nil || agent.Capabilities.MultipleWorkingDirectories == nil) {
		dirs = dirs[:1] // spec: without the capability, extra directories are ignored
	}

	now := h.opts.Clock()
	nowISO := reducer.FormatTime(now)
	st := &wire.SessionState{
		Provider:           provider,
		Title:              "",
		Status:             wire.SessionStatusIdle,
		WorkingDirectories: slices.Clone(dirs),
		Lifecycle:          wire.SessionLifecycleCreating,
		ActiveClients:      []wire.SessionActiveClient{},
	}
	if p.ActiveClient != nil {
		st.ActiveClients = append(st.ActiveClients, *p.ActiveClient)
	}
	cfg := h.resolveConfig(ctx, provider, p.Config)
	st.Config = &cfg

	_, resolves := h.handler.(ConfigResolver)
	g := &sessionGroup{settingsUnknown: resolves && len(cfg.Schema.Properties) == 0}
	sess := newChannel(uri, chanSession)
	sess.mu, sess.group, sess.session = &g.mu, g, st
	g.session = sess

	// The group's lock is held until the session is announced (but for
	// the store's write), so that nobody reads it half-made; it is free
	// (nobody else can reach the group yet) and comes before Host.mu in
	// the lock order.
	g.mu.Lock()
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		g.mu.Unlock()
		refuse(Errorf(CodeInternalError, "the server is shutting down"))
		return
	}
	if _, exists := h.channels[uri]; exists {
		h.mu.Unlock()
		g.mu.Unlock()
		refuse(Errorf(CodeSessionAlreadyExists, "session %s already exists", uri))
		return
	}
	if h.sessions >= h.opts.MaxSessions {
		h.mu.Unlock()
		g.mu.Unlock()
		refuse(Errorf(CodeInternalError, "session limit reached: this server allows at most %d sessions", h.opts.MaxSessions))
		return
	}
	// The default chat takes the name VS Code derives from the session's
	// (wire.DefaultChatURI): it subscribes to that name without reading
	// defaultChat, so the session publishes it as the one name of its
	// default chat, for every client.
	chatURI := wire.DefaultChatURI(uri)
	if _, taken := h.channels[chatURI]; taken {
		// Only a chat of this very session may carry the name, and the
		// session does not exist: nobody can have taken it.
		h.mu.Unlock()
		g.mu.Unlock()
		refuse(Errorf(CodeAlreadyExists, "chat %s, the default chat of the new session %s, already exists", chatURI, uri))
		return
	}
	chat := h.newChatLocked(g, chatURI, wire.ChatState{
		Resource:   chatURI,
		Title:      "",
		Status:     wire.SessionStatusIdle,
		ModifiedAt: nowISO,
		Origin:     &wire.ChatOrigin{Value: &wire.ChatOriginUser{Kind: wire.ChatOriginKindUser}},
		Turns:      []wire.Turn{},
		Draft:      draft,
	})
	st.Chats = []wire.ChatSummary{chat.chat.mirrored}
	st.DefaultChat = wire.Ptr(chatURI)
	g.summary = wire.SessionSummary{Resource: uri, Provider: provider, CreatedAt: nowISO, ModifiedAt: nowISO}
	g.summary = summaryOf(g)
	g.lastSummaryNote = now
	if p.ProgressToken != nil {
		g.progress = &progressWatch{c: r.c, token: *p.ProgressToken}
	}
	h.channels[uri] = sess
	h.channels[chatURI] = chat
	h.sessions++
	h.dir.add(uri, chatURI)
	if h.ds != nil {
		// Stored before it is announced, without holding a lock across the
		// write: whoever reaches the session meanwhile waits for the write
		// like for any other of the session (pipeline.go).
		h.mu.Unlock()
		h.indexChat(chatURI, uri)
		h.storeNowLocked(g, true)
		if sess.removed {
			// Disposed by a client that guessed its URI while it was
			// being stored: never announced, so nothing to take back.
			g.mu.Unlock()
			h.reply(r, nil, nil)
			return
		}
		h.mu.Lock()
	}
	h.broadcastRootLocked("root/sessionAdded", wire.SessionAddedParams{Channel: RootURI, Summary: g.summary})
	h.mu.Unlock()
	h.filesCreated(r.c, uri)
	h.reply(r, nil, nil)
	h.updateActiveSessions()
	h.reportProgressLocked(g, 0, fmt.Sprintf("starting the %s agent", provider))
	g.mu.Unlock()
	if h.handler != nil {
		h.handler.CreateSession(h.ctx, uri, chatURI, p)
	}
}

// absoluteDir reports whether a working directory names an absolute local
// directory: an absolute path or a file URI without a host (or localhost).
func absoluteDir(d string) bool {
	if strings.HasPrefix(d, "file:") {
		u, err := url.Parse(d)
		return err == nil && (u.Host == "" || u.Host == "localhost") && strings.HasPrefix(u.Path, "/")
	}
	return strings.HasPrefix(d, "/")
}

// newChatLocked makes a chat channel of group g. Called with h.mu held
// (the channel is not reachable yet, so its own lock is not needed).
func (h *Host) newChatLocked(g *sessionGroup, uri string, st wire.ChatState) *channel {
	ch := newChannel(uri, chanChat)
	ch.mu, ch.group = &g.mu, g
	ch.chat = &chatData{st: &st, stream: reducer.Streaming{Lazy: true}, created: h.opts.Clock()}
	ch.chat.mirrored = chatSummaryOf(ch.chat.st)
	ch.chat.mirroredAt = ch.chat.created
	g.chats = append(g.chats, ch)
	return ch
}

// lockLive returns the live channel uri of the given kind with its lock
// held, or the error that it does not exist.
func (h *Host) lockLive(uri string, kind chanKind) (*channel, *Error) {
	ch := h.lookup(uri)
	if ch != nil && ch.kind == kind {
		ch.mu.Lock()
		if !ch.removed {
			return ch, nil
		}
		ch.mu.Unlock()
	}
	switch kind {
	case chanSession:
		return nil, Errorf(CodeSessionNotFound, "session %s does not exist", uri)
	case chanChat:
		return nil, Errorf(CodeNotFound, "chat %s does not exist", uri)
	}
	return nil, notFoundError(uri)
}

// disposeSession removes a session without turns, with its rows. A
// session with turns is archived and released instead, never deleted
// (archive.go).
func (h *Host) disposeSession(ctx context.Context, r *request, uri string) {
	ch, err := h.lockLive(uri, chanSession)
	if err != nil {
		h.reply(r, nil, err)
		return
	}
	g := ch.group
	// What the session's subscribers are owed goes out before it goes.
	h.awaitHeldLocked(g)
	if ch.removed {
		g.mu.Unlock()
		h.reply(r, nil, Errorf(CodeSessionNotFound, "session %s does not exist", uri))
		return
	}
	if hasTurnsLocked(g) {
		// History is never destroyed here: archived and released.
		h.archiveSession(r, g) // archive.go
		return
	}
	h.removeSession(g, true)
	h.reply(r, nil, nil)
}

// removeSession removes the live session of g for good, with its rows,
// and announces it (root/sessionRemoved); with release, the handler lets
// go of its agent (Handler.DisposeSession). Called with g.mu held, after
// the group's held actions went out; it releases it.
func (h *Host) removeSession(g *sessionGroup, release bool) {
	ch, uri := g.session, g.session.uri
	var loaded func()
	if h.ds != nil {
		// Gone from the store before its removal is announced; nobody
		// loads it back from there while its rows are being deleted.
		loaded = h.holdLoad(uri)
		for _, c := range g.chats {
			h.ds.cp.Forget(c.uri)
		}
		h.unindexSession(uri)
	}
	for _, c := range g.chats {
		h.removeChannelLocked(c)
	}
	h.removeChannelLocked(ch)
	g.progress = nil
	g.mu.Unlock()
	if loaded != nil {
		h.deleteStored(uri)
		loaded()
	}
	h.sessionGone(uri)
	h.filesDisposed(uri)
	if release && h.handler != nil {
		h.handler.DisposeSession(h.ctx, uri)
	}
	h.releaseSession(uri) // holders.go
}

// createChat adds a further chat to a session. Each chat is its own
// conversation with the session's agent (an ACP agent runs it as another
// of its sessions), so it needs the agent's multipleChats capability.
func (h *Host) createChat(ctx context.Context, r *request, session string) {
	var p wire.CreateChatParams
	if err := decodeParams("createChat", r.params, &p); err != nil {
		h.reply(r, nil, err)
		return
	}
	sess := h.lookup(session)
	if sess == nil || sess.kind != chanSession {
		h.reply(r, nil, Errorf(CodeSessionNotFound, "session %s does not exist", session))
		return
	}
	if perr := checkNewChatURI(p.Chat, session); perr != nil {
		if ch := h.lookup(p.Chat); ch != nil && ch.kind == chanChat {
			// The default chat's own name, say: that it exists says more.
			perr = Errorf(CodeAlreadyExists, "chat %s already exists", p.Chat)
		}
		h.reply(r, nil, perr)
		return
	}
	g := sess.group
	g.mu.Lock()
	if h.sameChatLocked(g, p) {
		// VS Code sends createChat again for a chat it made (its host
		// treats that as a no-op); the chat is there as asked.
		g.mu.Unlock()
		h.reply(r, nil, nil)
		return
	}
	chat, err := h.addChatLocked(sess, p)
	var attach *reattach
	if err == nil {
		attach = h.reattachLocked(g) // an archived session's agent (archive.go)
	}
	g.mu.Unlock()
	if err != nil {
		h.reply(r, nil, err)
		return
	}
	h.reply(r, nil, nil)
	if h.handler != nil {
		attach.run(h)
		h.handler.CreateChat(h.ctx, session, p.Chat, p)
	}
	if p.InitialMessage == nil {
		return
	}
	// Started after CreateChat returned, so the handler knows the chat
	// before it is handed the turn.
	g.mu.Lock()
	defer g.mu.Unlock()
	if chat.removed {
		return
	}
	started := wire.Action(&wire.ChatTurnStartedAction{TurnID: h.opts.NewID(), StartedAt: reducer.FormatTime(h.opts.Clock()), Message: *p.InitialMessage})
	if _, err := h.applyLocked(chat, started, nil, nil); err != nil {
		h.log.Error().Err(err).Str("chat", p.Chat).Msg("failed to start a chat's first turn")
		return
	}
	h.handoff(chat, started, wire.ActionOrigin{ClientID: r.c.clientIDLocked()})
}

// sameChatLocked reports whether p asks for a chat that g already has as
// asked: a live further chat of that name, with the same working
// directories, and nothing for the new chat to start with (no initial
// message, no source). Called with the group's mutex held.
func (h *Host) sameChatLocked(g *sessionGroup, p wire.CreateChatParams) bool {
	if p.InitialMessage != nil || p.Source != nil {
		return false
	}
	ch := h.lookup(p.Chat)
	return ch != nil && ch.kind == chanChat && ch.group == g && !ch.removed && ch != g.defaultChat() &&
		slices.Equal(ch.chat.st.WorkingDirectories, p.WorkingDirectories)
}

// checkNewChatURI checks the name a client gives a chat it creates in
// session: any well-formed ahp-chat: URI, kept verbatim (VS Code waits for
// its own URI in the session's chats). A name in the derived form
// (ahp-chat://<chatId>/<base64url(session)>) must encode this session, and
// may not take the default chat's or a subagent's chat id.
func checkNewChatURI(chat, session string) *Error {
	if !wire.ValidChatURI(chat) {
		return Errorf(CodeInvalidParams, "invalid params for createChat: chat must be an ahp-chat: URI such as ahp-chat://<chatId>/<base64url of the session URI>, got %q", chat)
	}
	name, ok := wire.ParseChatURI(chat)
	switch {
	case !ok:
		return nil // ahp-chat:/<id> or another opaque name
	case name.Session != session:
		return Errorf(CodeInvalidParams, "invalid params for createChat: chat %s belongs to session %s by its name, not to %s", chat, name.Session, session)
	case name.ChatID == wire.DefaultChatID || strings.HasPrefix(name.ChatID, wire.SubagentChatID+"/"):
		return Errorf(CodeInvalidParams, "invalid params for createChat: chat id %q is reserved (the session's default chat, or a subagent's)", name.ChatID)
	}
	return nil
}

// addChatLocked checks a createChat request against the session and adds
// the chat to it (session/chatAdded). Called with the group's mutex held.
func (h *Host) addChatLocked(sess *channel, p wire.CreateChatParams) (*channel, *Error) {
	if sess.removed {
		return nil, Errorf(CodeSessionNotFound, "session %s does not exist", sess.uri)
	}
	if sess.group.detached {
		return nil, Errorf(CodeInvalidParams, "session %s was restored from the state file, and this server cannot re-attach its agent; it keeps its history but takes no new chats", sess.uri)
	}
	agent := h.agentInfo(sess.session.Provider)
	if caps := agent.Capabilities; caps == nil || caps.MultipleChats == nil {
		return nil, Errorf(CodeMethodNotFound, "the %s agent runs one chat per session: it does not advertise multipleChats", sess.session.Provider)
	}
	fork, ferr := h.forkSourceLocked(sess, agent, p) // fork.go
	if ferr != nil {
		return nil, ferr
	}
	for _, d := range p.WorkingDirectories {
		if !slices.Contains(sess.session.WorkingDirectories, d) {
			return nil, Errorf(CodeInvalidParams, "invalid params for createChat: %s is not one of the session's working directories", d)
		}
	}
	if p.InitialMessage != nil && p.InitialMessage.Origin.Kind != wire.MessageKindUser {
		return nil, Errorf(CodeInvalidParams, "invalid params for createChat: the initial message must be a user message")
	}
	h.mu.Lock()
	if _, taken := h.channels[p.Chat]; taken {
		h.mu.Unlock()
		return nil, Errorf(CodeAlreadyExists, "chat %s already exists", p.Chat)
	}
	chat := h.newChatLocked(sess.group, p.Chat, wire.ChatState{
		Resource:           p.Chat,
		Title:              "",
		Status:             wire.SessionStatusIdle,
		ModifiedAt:         reducer.FormatTime(h.opts.Clock()),
		Origin:             fork.chatOrigin(),
		WorkingDirectories: slices.Clone(p.WorkingDirectories),
		Turns:              fork.chatTurns(),
	})
	h.channels[p.Chat] = chat
	h.mu.Unlock()
	h.indexChat(p.Chat, sess.uri)
	if _, err := h.applyLocked(sess, wire.Action(&wire.SessionChatAddedAction{Summary: chat.chat.mirrored}), nil, nil); err != nil {
		h.log.Error().Err(err).Str("chat", p.Chat).Msg("failed to add a chat to the catalogue")
	}
	return chat, nil
}

// disposeChat removes a chat that is not its session's default one.
func (h *Host) disposeChat(ctx context.Context, r *request, uri string) {
	ch, err := h.lockLive(uri, chanChat)
	if err != nil {
		h.reply(r, nil, err)
		return
	}
	g := ch.group
	h.awaitHeldLocked(g) // what the chat's subscribers are owed goes out first
	if ch.removed {
		g.mu.Unlock()
		h.reply(r, nil, Errorf(CodeNotFound, "chat %s does not exist", uri))
		return
	}
	if g.defaultChat() == ch {
		g.mu.Unlock()
		h.reply(r, nil, Errorf(CodeInvalidParams, "chat %s is its session's default chat; dispose the session instead", uri))
		return
	}
	h.dropInputsLocked(ch, func(string) bool { return true })
	h.removeChannelLocked(ch)
	g.chats = slices.DeleteFunc(g.chats, func(c *channel) bool { return c == ch })
	sess := g.session
	if _, err := h.applyLocked(sess, wire.Action(&wire.SessionChatRemovedAction{Chat: uri}), nil, nil); err != nil {
		h.log.Error().Err(err).Str("chat", uri).Msg("failed to remove a chat from the catalogue")
	}
	g.mu.Unlock()
	if h.handler != nil {
		h.handler.DisposeChat(h.ctx, sess.uri, uri)
	}
	h.reply(r, nil, nil)
}

// moveChat answers that no chat can move: a chat is one conversation of
// its session's agent (an ACP session of that agent process, in the
// session's working directory), so it cannot join another session, and no
// chat is ever marked movable.
func (h *Host) moveChat(_ context.Context, r *request, chat string) {
	if ch := h.lookup(chat); ch == nil || ch.kind != chanChat {
		h.reply(r, nil, Errorf(CodeNotFound, "chat %s does not exist", chat))
		return
	}
	h.reply(r, nil, Errorf(CodeInvalidParams, "invalid params for moveChat: chat %s is not movable: each chat is a conversation of its own session's agent", chat))
}

// listAutomationTriggerDefinitions answers with the empty catalogue: the
// agents behind this host offer no automations, and an empty answer lets a
// client show none instead of an error.
func (h *Host) listAutomationTriggerDefinitions(_ context.Context, r *request, _ string) {
	h.reply(r, wire.ListAutomationTriggerDefinitionsResult{Items: []wire.AutomationTriggerDefinition{}}, nil)
}

// listCursor is the position after which listSessions continues: the
// catalogue is ordered by modifiedAt (newest first), then by URI.
type listCursor struct {
	ModifiedAt string `json:"m"`
	Resource   string `json:"r"`
}

func encodeListCursor(s wire.SessionSummary) string {
	b, _ := json.Marshal(listCursor{ModifiedAt: s.ModifiedAt, Resource: s.Resource})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeListCursor(s string) (listCursor, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	var c listCursor
	if err != nil || json.Unmarshal(b, &c) != nil || c.Resource == "" {
		return listCursor{}, false
	}
	return c, true
}

// listSessions returns the session catalogue, most recently modified
// first, a page at a time when the client gives a limit.
func (h *Host) listSessions(_ context.Context, r *request, _ string) {
	var p wire.ListSessionsParams
	if err := decodeParams("listSessions", r.params, &p); err != nil {
		h.reply(r, nil, err)
		return
	}
	if h.ds != nil {
		h.listSessionsStored(r, p)
		return
	}
	items, extMore := h.withExternal(h.summaries(), p) // external.go
	if p.Cursor != nil {
		cur, ok := decodeListCursor(*p.Cursor)
		if !ok {
			h.reply(r, nil, Errorf(CodeInvalidParams, "invalid params for listSessions: the cursor is not one this server gave out"))
			return
		}
		i, _ := slices.BinarySearchFunc(items, cur, func(s wire.SessionSummary, c listCursor) int {
			return cmp.Or(-cmp.Compare(s.ModifiedAt, c.ModifiedAt), -cmp.Compare(s.Resource, c.Resource))
		})
		for i < len(items) && items[i].ModifiedAt == cur.ModifiedAt && items[i].Resource == cur.Resource {
			i++
		}
		items = items[i:]
	}
	res := wire.ListSessionsResult{Items: items}
	if p.Limit != nil {
		if *p.Limit <= 0 {
			h.reply(r, nil, Errorf(CodeInvalidParams, "invalid params for listSessions: limit must be positive"))
			return
		}
		if int64(len(items)) > *p.Limit {
			res.Items = items[:*p.Limit]
			res.NextCursor = wire.Ptr(encodeListCursor(res.Items[len(res.Items)-1]))
		} else if extMore && len(items) > 0 {
			res.NextCursor = wire.Ptr(encodeListCursor(items[len(items)-1]))
		}
	}
	h.reply(r, res, nil)
}

// summaries returns every live session's catalogue entry, most recently
// modified first, then by URI descending (the store's order, so that the
// two merge).
func (h *Host) summaries() []wire.SessionSummary {
	h.mu.Lock()
	var groups []*sessionGroup
	for _, ch := range h.channels {
		if ch.kind == chanSession {
			groups = append(groups, ch.group)
		}
	}
	h.mu.Unlock()
	items := make([]wire.SessionSummary, 0, len(groups))
	for _, g := range groups {
		g.mu.Lock()
		if !g.session.removed {
			items = append(items, summaryOf(g))
		}
		g.mu.Unlock()
	}
	slices.SortFunc(items, func(a, b wire.SessionSummary) int {
		return cmp.Or(-cmp.Compare(a.ModifiedAt, b.ModifiedAt), -cmp.Compare(a.Resource, b.Resource))
	})
	return items
}

// releaseActiveClient removes a client from the active clients of the
// sessions match selects, unless another of its connections still
// watches that session (spec: the host removes a client that unsubscribed,
// disconnected, or reconnected without the session).
func (h *Host) releaseActiveClient(clientID string, match func(session string) bool) {
	if clientID == "" {
		return
	}
	h.mu.Lock()
	var groups []*sessionGroup
	for _, ch := range h.channels {
		if ch.kind != chanSession || !match(ch.uri) {
			continue
		}
		watched := false
		for c := range ch.subs {
			if c.clientID == clientID {
				watched = true
				break
			}
		}
		if !watched {
			groups = append(groups, ch.group)
		}
	}
	h.mu.Unlock()
	for _, g := range groups {
		g.mu.Lock()
		sess := g.session
		if !sess.removed && slices.ContainsFunc(sess.session.ActiveClients, func(a wire.SessionActiveClient) bool { return a.ClientID == clientID }) {
			if _, err := h.applyLocked(sess, wire.Action(&wire.SessionActiveClientRemovedAction{ClientID: clientID}), nil, nil); err != nil {
				h.log.Error().Err(err).Msg("failed to remove an active client")
			}
			h.failClientToolsLocked(g, clientID)
		}
		g.mu.Unlock()
	}
}

// failClientToolsLocked fails the running tool calls a departed client
// was executing (spec: with chat/toolCallComplete, not a cancellation), so
// no turn waits forever for a result nobody will send. Called with the
// group's mutex held.
func (h *Host) failClientToolsLocked(g *sessionGroup, clientID string) {
	for _, ch := range g.chats {
		t := ch.chat.st.ActiveTurn
		if t == nil {
			continue
		}
		var ids []string
		for _, p := range t.ResponseParts {
			tp, ok := p.Value.(*wire.ToolCallResponsePart)
			if !ok || tp == nil {
				continue
			}
			if c, ok := contributorOf(tp.ToolCall).(*wire.ToolCallClientContributor); ok && c != nil && c.ClientID == clientID {
				ids = append(ids, tp.ToolCall.ToolCallID())
			}
		}
		for _, id := range ids {
			done := wire.Action(&wire.ChatToolCallCompleteAction{TurnID: t.ID, ToolCallID: id, Result: wire.ToolCallResult{
				Success:          false,
				PastTenseMessage: wire.PlainText("The client running this tool went away"),
				Error:            &wire.ToolCallError{Message: fmt.Sprintf("client %s, which was running this tool, is no longer connected", clientID)},
			}})
			if _, err := h.applyLocked(ch, done, nil, nil); err != nil {
				h.log.Error().Err(err).Str("chat", ch.uri).Msg("failed to fail a departed client's tool call")
				continue
			}
			h.handoff(ch, done, wire.ActionOrigin{})
		}
	}
}

// resolveConfig is the initial config of a new session: the handler's
// schema for the provider when it can describe one, with the values the
// client asked for laid over the handler's defaults. Every session has a
// config, so that session/configChanged always has values to merge into.
func (h *Host) resolveConfig(ctx context.Context, provider string, requested map[string]any) wire.SessionConfigState {
	cfg := wire.SessionConfigState{
		Schema: wire.SessionConfigSchema{Type: "object", Properties: map[string]wire.SessionConfigPropertySchema{}},
		Values: map[string]any{},
	}
	if r, ok := h.handler.(ConfigResolver); ok {
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
func (h *Host) resolveSessionConfig(ctx context.Context, r *request, _ string) {
	var p wire.ResolveSessionConfigParams
	if err := decodeParams("resolveSessionConfig", r.params, &p); err != nil {
		h.reply(r, nil, err)
		return
	}
	provider, _, perr := h.pickProvider(p.Provider)
	if perr != nil && p.Provider != nil && *p.Provider != "" {
		h.reply(r, nil, perr)
		return
	}
	cfg := h.resolveConfig(ctx, provider, p.Config)
	h.reply(r, wire.ResolveSessionConfigResult(cfg), nil)
}

// sessionConfigCompletions offers the values of a dynamic-enum config
// property: those the schema lists that match the query.
func (h *Host) sessionConfigCompletions(ctx context.Context, r *request, _ string) {
	var p wire.SessionConfigCompletionsParams
	if err := decodeParams("sessionConfigCompletions", r.params, &p); err != nil {
		h.reply(r, nil, err)
		return
	}
	provider, _, perr := h.pickProvider(p.Provider)
	if perr != nil && p.Provider != nil && *p.Provider != "" {
		h.reply(r, nil, perr)
		return
	}
	cfg := h.resolveConfig(ctx, provider, p.Config)
	prop, ok := cfg.Schema.Properties[p.Property]
	if !ok {
		h.reply(r, nil, Errorf(CodeInvalidParams, "invalid params for sessionConfigCompletions: the %s agent has no setting %q", provider, p.Property))
		return
	}
	q := strings.ToLower(deref(p.Query))
	res := wire.SessionConfigCompletionsResult{Items: []wire.SessionConfigValueItem{}}
	for i, v := range prop.Enum {
		s := fmt.Sprint(v)
		label := s
		if i < len(prop.EnumLabels) {
			label = prop.EnumLabels[i]
		}
		if q != "" && !strings.Contains(strings.ToLower(s), q) && !strings.Contains(strings.ToLower(label), q) {
			continue
		}
		item := wire.SessionConfigValueItem{Value: s, Label: label}
		if i < len(prop.EnumDescriptions) {
			item.Description = wire.Ptr(prop.EnumDescriptions[i])
		}
		res.Items = append(res.Items, item)
	}
	h.reply(r, res, nil)
}

// pickProvider returns the provider a command names, or the first agent of
// the root state when it names none, with its root entry.
func (h *Host) pickProvider(requested *string) (string, wire.AgentInfo, *Error) {
	var agents []wire.AgentInfo
	h.ReadRoot(func(r *wire.RootState) { agents = slices.Clone(r.Agents) })
	var names []string
	for _, a := range agents {
		names = append(names, a.Provider)
		if requested != nil && *requested == a.Provider {
			return a.Provider, a, nil
		}
	}
	switch {
	case requested != nil && *requested != "":
		return "", wire.AgentInfo{}, Errorf(CodeProviderNotFound, "no agent for provider %q; this server has [%s]", *requested, strings.Join(names, ", "))
	case len(agents) > 0:
		return agents[0].Provider, agents[0], nil
	default:
		return "", wire.AgentInfo{}, Errorf(CodeProviderNotFound, "no agent providers are configured on this server")
	}
}

// agentInfo returns a provider's root entry (zero when unknown). It takes
// the root lock, which comes after a group's in the lock order.
func (h *Host) agentInfo(provider string) wire.AgentInfo {
	var out wire.AgentInfo
	h.ReadRoot(func(r *wire.RootState) {
		for _, a := range r.Agents {
			if a.Provider == provider {
				out = a
			}
		}
	})
	return out
}

// sessionGone takes the session uri, whose channels are gone, out of the
// count and the directory, and tells the root's subscribers.
func (h *Host) sessionGone(uri string) {
	h.mu.Lock()
	h.sessions--
	h.dir.remove(uri)
	h.broadcastRootLocked("root/sessionRemoved", wire.SessionRemovedParams{Channel: RootURI, Session: uri})
	h.mu.Unlock()
	h.updateActiveSessions()
}
