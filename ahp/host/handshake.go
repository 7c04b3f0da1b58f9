package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/ahp-bridge/ahp-bridge/ahp/codec"
	"github.com/ahp-bridge/ahp-bridge/ahp/host/workspace"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// maxRememberedClients bounds the clientId → version memory that lets a
// client resume with `reconnect` as the first message of a new connection.
const maxRememberedClients = 10000

// initializeParams is initialize's params read leniently: the version is
// not known yet, so only what every version shares is read.
type initializeParams struct {
	ProtocolVersions     json.RawMessage `json:"protocolVersions"`
	ClientID             string          `json:"clientId"`
	InitialSubscriptions []string        `json:"initialSubscriptions"`
}

// initialize negotiates the protocol version and sends initial snapshots.
func (h *Host) initialize(c *conn, m *inMessage) {
	var p initializeParams
	if err := decodeParams("initialize", m.params, &p); err != nil {
		h.queue(c, encodeError(m.id, err))
		return
	}
	var offered []string
	if err := json.Unmarshal(p.ProtocolVersions, &offered); err != nil || offered == nil { // absent or null
		h.queue(c, encodeError(m.id, Errorf(CodeInvalidParams, "invalid params for initialize: protocolVersions must be an array of version strings")))
		return
	}
	if p.ClientID == "" {
		h.queue(c, encodeError(m.id, Errorf(CodeInvalidParams, "invalid params for initialize: clientId is required")))
		return
	}
	if c.isInitialized() {
		h.queue(c, encodeError(m.id, Errorf(CodeInvalidRequest, "the connection is already initialized")))
		return
	}
	offer, v, err := codec.Negotiate(offered)
	switch {
	case errors.Is(err, codec.ErrMalformedVersion):
		h.queue(c, encodeError(m.id, Errorf(CodeInvalidParams, "invalid params for initialize: %v", err)))
		return
	case err != nil:
		e := &Error{
			Code:    CodeUnsupportedProtocolVersion,
			Message: fmt.Sprintf("unsupported protocol version: %v", err),
			Data:    wire.UnsupportedProtocolVersionErrorData{SupportedVersions: codec.Supported()},
		}
		c.log.Warn().Strs("offered", offered).Msg("protocol negotiation failed; closing the connection")
		c.sendAndClose(encodeError(m.id, e), "protocol version negotiation failed")
		return
	}
	h.mu.Lock()
	c.initialized, c.clientID, c.version, c.codec = true, p.ClientID, v, h.codecLocked(v)
	h.rememberLocked(p.ClientID, v)
	old := h.takeOverLocked(c)
	h.mu.Unlock()
	h.closeTakenOver(old, p.ClientID)
	c.log.Debug().Str("client", p.ClientID).Str("version", offer.String()).Str("dialect", v.String()).Msg("client initialized")

	h.awaitHeld(p.InitialSubscriptions...)
	c.hold()
	snaps := h.subscribeAll(c, p.InitialSubscriptions)
	h.noteClient(c) // clients.go: a restarted bridge knows it
	h.mu.Lock()
	seq := h.seq
	h.mu.Unlock()
	res := initializeResult{
		ProtocolVersion: offer.String(), // a 1.x client gets the version it offered, e.g. 1.1.0

		ServerSeq:                   seq,
		ServerInfo:                  &wire.Implementation{Name: "ahp-bridge"},
		Snapshots:                   snaps,
		CompletionTriggerCharacters: h.opts.CompletionTriggerCharacters,
	}
	if h.opts.ServerVersion != "" {
		res.ServerInfo.Version = wire.Ptr(h.opts.ServerVersion)
	}
	if dir := workspace.DefaultDirectoryURI(h.opts.DefaultDirectory); dir != "" {
		res.DefaultDirectory = &dir
	}
	frame := h.resultFrame(&request{c: c, id: m.id, method: "initialize"}, res)
	h.stats.queued.Add(1)
	c.release(frame)
}

// initializeResult is wire.InitializeResult with the snapshots' states
// already encoded in the connection's dialect.
type initializeResult struct {
	ProtocolVersion             string               `json:"protocolVersion"`
	ServerSeq                   int64                `json:"serverSeq"`
	ServerInfo                  *wire.Implementation `json:"serverInfo,omitempty"`
	Snapshots                   []snapshotOut        `json:"snapshots"`
	DefaultDirectory            *string              `json:"defaultDirectory,omitempty"`
	CompletionTriggerCharacters []string             `json:"completionTriggerCharacters,omitzero"`
}

// A clientId names one client, and clients recognise their own actions'
// echoes by it, so it is never live on two connections at once: a
// connection that initializes (or resumes with reconnect) with a clientId
// already in use takes it over, and the older connection is closed with an
// error saying so. The newcomer wins because the usual reason is a client
// reconnecting before the server noticed that its old connection died; it
// must not be locked out until that connection times out.
// docs/protocol-versions.md states the policy.

// takeOverLocked returns the other connections of c's clientId, which c
// takes over. Called with h.mu held.
func (h *Host) takeOverLocked(c *conn) []*conn {
	var old []*conn
	for o := range h.conns {
		if o != c && o.initialized && o.clientID == c.clientID {
			old = append(old, o)
		}
	}
	return old
}

// closeTakenOver closes the connections a newer one took clientID from,
// telling each why in a last error frame (JSON-RPC id null).
func (h *Host) closeTakenOver(old []*conn, clientID string) {
	for _, o := range old {
		o.sendAndClose(encodeError(nil, Errorf(CodeConflict,
			"client %s connected again on another connection, which takes over its id; this connection is closed", clientID)),
			"its clientId was taken over by a newer connection")
	}
}

// codecLocked returns the codec of version v, one value shared by every
// connection speaking it, so a broadcast envelope is translated once per
// version, not once per connection. Called with h.mu held.
func (h *Host) codecLocked(v codec.Version) codec.Codec {
	cd, ok := h.codecs[v]
	if !ok {
		cd = codec.For(v, h.dir)
		h.codecs[v] = cd
	}
	return cd
}

// rememberLocked records the version a client negotiated, so that it may
// resume later with `reconnect` as the first message of a new connection
// (the official clients do). Called with h.mu held.
func (h *Host) rememberLocked(clientID string, v codec.Version) {
	if _, ok := h.clientVersions[clientID]; !ok && len(h.clientVersions) >= maxRememberedClients {
		for k := range h.clientVersions { // forget an arbitrary one
			delete(h.clientVersions, k)
			break
		}
	}
	h.clientVersions[clientID] = v
}

// reconnect replays missed envelopes from the ring, or sends fresh
// snapshots when the gap cannot be replayed, in the dialect the client
// negotiated when it initialized. Its params need no `channel` (VS Code
// sends none). A client this process has not seen is looked up in the
// store (clients.go): a bridge restarted under it answers with snapshots in
// the dialect it had; one never seen gets -32008 NotFound, on which VS
// Code's newest client sends initialize with the same clientId.
func (h *Host) reconnect(c *conn, m *inMessage) {
	var p wire.ReconnectParams
	if err := decodeParams("reconnect", m.params, &p); err != nil {
		h.queue(c, encodeError(m.id, err))
		return
	}
	if p.ClientID == "" {
		h.queue(c, encodeError(m.id, Errorf(CodeInvalidParams, "invalid params for reconnect: clientId is required")))
		return
	}
	var stored *codec.Version
	if !c.isInitialized() {
		h.mu.Lock()
		_, inMemory := h.clientVersions[p.ClientID]
		h.mu.Unlock()
		if !inMemory {
			// Read without a lock held: it is the store's I/O.
			if v, subs, ok := h.storedClient(p.ClientID); ok {
				stored = &v
				if p.Subscriptions == nil {
					p.Subscriptions = subs // a client that did not say: what it had
				}
			}
		}
	}
	h.restoreAll(p.Subscriptions)
	h.mu.Lock()
	if !c.initialized {
		v, known := h.clientVersions[p.ClientID]
		if !known && stored != nil {
			v, known = *stored, true
			h.rememberLocked(p.ClientID, v)
		}
		if !known {
			h.mu.Unlock()
			h.queue(c, encodeError(m.id, Errorf(CodeNotFound,
				"client %s is not known to this server (it may have restarted without a state file): send initialize", p.ClientID)))
			return
		}
		c.initialized, c.clientID, c.version, c.codec = true, p.ClientID, v, h.codecLocked(v)
		old := h.takeOverLocked(c)
		defer h.closeTakenOver(old, p.ClientID)
	} else if c.clientID != p.ClientID {
		h.mu.Unlock()
		h.queue(c, encodeError(m.id, Errorf(CodeInvalidParams, "invalid params for reconnect: this connection is client %s, not %s", c.clientID, p.ClientID)))
		return
	}
	r := &request{c: c, id: m.id, method: "reconnect"}
	if h.ring.canReplayFrom(p.LastSeenServerSeq, h.seq) {
		// Replay under the sequencer lock: nothing can be sequenced between
		// collecting the envelopes, subscribing and queueing the reply.
		missing := []string{}
		want := map[string]bool{}
		for _, uri := range p.Subscriptions {
			chans := h.channelsFor(c, uri)
			ok := len(chans) > 0
			for _, cu := range chans {
				if h.channels[cu] == nil {
					ok = false
				}
			}
			if !ok {
				if !slices.Contains(missing, uri) {
					missing = append(missing, uri)
				}
				continue
			}
			for _, cu := range chans {
				want[cu] = true
				if _, subscribed := c.subs[cu]; !subscribed && len(c.subs) < h.opts.MaxSubscriptionsPerConn {
					ch := h.channels[cu]
					ch.addSub(c)
					c.subs[cu] = ch
				}
			}
		}
		actions := []json.RawMessage{}
		h.ring.after(p.LastSeenServerSeq, func(e *ringEntry) {
			if !want[e.channel] {
				return
			}
			if c.codec == nil {
				actions = append(actions, e.env)
				return
			}
			_, envs := h.translateEnvelope(c.codec, codec.Envelope{Channel: e.channel, Action: e.action, ServerSeq: e.seq, Origin: e.origin})
			actions = append(actions, envs...)
		})
		res := struct {
			Type    wire.ReconnectResultType `json:"type"`
			Actions []json.RawMessage        `json:"actions"`
			Missing []string                 `json:"missing"`
		}{wire.ReconnectResultTypeReplay, actions, missing}
		h.ops.replays.Add(1)
		h.queue(c, h.resultFrame(r, res))
		h.mu.Unlock()
		h.noteClient(c)
		// Resubscribed without the checks subscribe makes: the watches
		// this connection may not see are cut off now.
		h.enforceWatches(c)
		h.releaseUnsubscribed(c.clientIDLocked(), p.Subscriptions)
		return
	}
	h.mu.Unlock()
	h.ops.snapshots.Add(1)
	h.awaitHeld(p.Subscriptions...)
	c.hold()
	snaps := h.subscribeAll(c, p.Subscriptions)
	// The spec's snapshot result has no `missing`; what could not be
	// snapshotted (a session disposed meanwhile) is named there anyway, as
	// the replay result does, for clients that drop it from their set.
	// Unknown fields are ignored by the others.
	res := struct {
		Type      wire.ReconnectResultType `json:"type"`
		Snapshots []snapshotOut            `json:"snapshots"`
		Missing   []string                 `json:"missing,omitempty"`
	}{Type: wire.ReconnectResultTypeSnapshot, Snapshots: snaps, Missing: missingFrom(p.Subscriptions, snaps)}
	frame := h.resultFrame(r, res)
	h.stats.queued.Add(1)
	c.release(frame)
	h.noteClient(c)
	h.releaseUnsubscribed(p.ClientID, p.Subscriptions)
}

// missingFrom returns the subscriptions no snapshot answers, once each.
func missingFrom(subs []string, snaps []snapshotOut) []string {
	got := make(map[string]bool, len(snaps))
	for _, s := range snaps {
		got[s.Resource] = true
	}
	var missing []string
	for _, u := range subs {
		if !got[u] && !slices.Contains(missing, u) {
			missing = append(missing, u)
		}
	}
	return missing
}

// clientIDLocked returns the connection's clientId; called with h.mu held
// or after the handshake (it never changes once set).
func (c *conn) clientIDLocked() string { return c.clientID }

// releaseUnsubscribed removes a reconnecting client from the active
// clients of sessions it did not resubscribe to (spec: a client that
// reconnects without the session in its subscriptions is no longer
// active there).
func (h *Host) releaseUnsubscribed(clientID string, subscriptions []string) {
	keep := map[string]bool{}
	for _, s := range subscriptions {
		keep[s] = true
	}
	h.releaseActiveClient(clientID, func(session string) bool { return !keep[session] })
}
