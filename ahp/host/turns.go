package host

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// A turns cursor names the oldest turn a client holds of a chat; the page
// before it is what fetchTurns loads next. It is opaque to clients and
// bound to its chat.
func turnsCursor(chat, turnID string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(chat + "\x00" + turnID))
}

func parseTurnsCursor(chat, cursor string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return "", false
	}
	c, turn, ok := strings.Cut(string(b), "\x00")
	return turn, ok && c == chat && turn != ""
}

// turnsPage returns up to limit completed turns of st before the turn
// named before (all turns when before is ""), oldest first, deep-copied so
// they do not alias live state, and whether older ones remain. ok is false
// when before names no turn of the chat.
func turnsPage(st *wire.ChatState, before string, limit int) (turns []wire.Turn, hasMore, ok bool, err error) {
	end := len(st.Turns)
	if before != "" {
		end = -1
		for i, t := range st.Turns {
			if t.ID == before {
				end = i
				break
			}
		}
		if end < 0 {
			return nil, false, false, nil
		}
	}
	start := max(0, end-limit)
	b, err := json.Marshal(st.Turns[start:end])
	if err != nil {
		return nil, false, true, err
	}
	if err := json.Unmarshal(b, &turns); err != nil {
		return nil, false, true, err
	}
	if turns == nil {
		turns = []wire.Turn{}
	}
	return turns, start > 0, true, nil
}

// fetchTurns loads the page of a chat's history older than the cursor the
// client holds (ChatState.turnsNextCursor from a snapshot with view.turns)
// into that client's state with chat/turnsLoaded, then answers {}. The
// authoritative state always holds every retained turn; only the
// subscriber that asked for a tail lacks the older ones, so the loaded
// page is sent to it alone (docs/protocol-versions.md §7 Q2). Without a
// cursor, a subscriber whose snapshot held every turn gets an empty page
// (AHP: the host dispatches chat/turnsLoaded before it answers); one that
// asked for a tail, or a connection not subscribed to the chat, gets only
// the answer, since the host keeps no per-client window to load from.
func (h *Host) fetchTurns(_ context.Context, r *request, uri string) {
	var p wire.FetchTurnsParams
	if err := decodeParams("fetchTurns", r.params, &p); err != nil {
		h.reply(r, nil, err)
		return
	}
	ch := h.lookup(uri)
	if ch == nil || ch.kind != chanChat {
		h.reply(r, nil, notFoundError(uri))
		return
	}
	if p.Cursor == nil {
		h.mu.Lock()
		_, subscribed := r.c.subs[uri]
		whole := subscribed && !r.c.tails[uri]
		h.mu.Unlock()
		if whole {
			ch.mu.Lock()
			if !ch.removed {
				// Under the chat's lock, as a page is sent below.
				h.sendPrivate(r.c, uri, []byte(`{"type":"chat/turnsLoaded","turns":[]}`))
			}
			ch.mu.Unlock()
		}
		h.reply(r, wire.FetchTurnsResult{}, nil)
		return
	}
	before, ok := parseTurnsCursor(uri, *p.Cursor)
	if !ok {
		h.reply(r, nil, Errorf(CodeInvalidParams, "invalid params for fetchTurns: the cursor is not one this server gave out for %s", uri))
		return
	}
	turns, more, found, err := h.turnsBefore(ch, before, DefaultFetchTurnsLimit)
	ch.mu.Lock()
	if ch.removed {
		ch.mu.Unlock()
		h.reply(r, nil, notFoundError(uri))
		return
	}
	if err != nil || !found {
		ch.mu.Unlock()
		if err != nil {
			h.reply(r, nil, &Error{Code: CodeInternalError, Message: err.Error()})
		} else {
			h.reply(r, nil, Errorf(CodeInvalidParams, "invalid params for fetchTurns: the cursor names a turn %s no longer holds", uri))
		}
		return
	}
	loaded := &wire.ChatTurnsLoadedAction{Type: wire.ActionTypeChatTurnsLoaded, Turns: turns}
	if more {
		loaded.TurnsNextCursor = wire.Ptr(turnsCursor(uri, turns[0].ID))
	}
	action, merr := json.Marshal(loaded)
	if merr != nil {
		ch.mu.Unlock()
		h.reply(r, nil, &Error{Code: CodeInternalError, Message: merr.Error()})
		return
	}
	// Under the chat's lock, so no action on it is sequenced between the
	// page and the envelope that delivers it.
	h.sendPrivate(r.c, uri, action)
	ch.mu.Unlock()
	h.reply(r, wire.FetchTurnsResult{}, nil)
}

// fetchTurnsPage serves the fetchTurns of dialects before 0.5.1 (routed
// here by their codecs): a page of the chat's history in the result.
func (h *Host) fetchTurnsPage(_ context.Context, r *request, uri string) {
	var p struct {
		Before *string `json:"before"`
		Limit  *int    `json:"limit"`
	}
	if err := decodeParams("fetchTurns", r.params, &p); err != nil {
		h.reply(r, nil, err)
		return
	}
	limit := DefaultFetchTurnsLimit
	if p.Limit != nil {
		if *p.Limit < 0 {
			h.reply(r, nil, Errorf(CodeInvalidParams, "invalid params for fetchTurns: limit must not be negative"))
			return
		}
		if *p.Limit > 0 {
			limit = min(*p.Limit, MaxFetchTurnsLimit)
		}
	}
	ch := h.lookup(uri)
	if ch == nil || ch.kind != chanChat {
		h.reply(r, nil, notFoundError(uri))
		return
	}
	turns, more, found, err := h.turnsBefore(ch, deref(p.Before), limit)
	switch {
	case err != nil:
		h.reply(r, nil, &Error{Code: CodeInternalError, Message: err.Error()})
	case !found:
		h.reply(r, nil, Errorf(CodeInvalidParams, "invalid params for fetchTurns: turn %s is not in %s", deref(p.Before), uri))
	default:
		h.reply(r, struct {
			Turns   []wire.Turn `json:"turns"`
			HasMore bool        `json:"hasMore"`
		}{turns, more}, nil)
	}
}
