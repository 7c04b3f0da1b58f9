package persist

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/ahp-bridge/ahp-bridge/ahp/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// Format versions the JSON the host keeps in the store's blobs.
const Format = 1

// StoredSession is the JSON the host keeps in a session row's Summary:
// the root-catalogue entry listSessions serves without loading the
// session, and the session's state (without its config, which has a
// column of its own, and without what lives only while the process does:
// active clients, inputs needed).
type StoredSession struct {
	V       int                 `json:"v"`
	Summary wire.SessionSummary `json:"summary"`
	State   *wire.SessionState  `json:"state"`
	// ArchivedAt is when the session was last archived (Unix ms), for
	// the host's archive retention; absent when it is not archived or was
	// archived by a bridge that did not record it.
	ArchivedAt int64 `json:"archivedAt,omitempty"`
}

// StoredChat is the JSON the host keeps in a chat row's Summary: the
// chat's state without its turns (rows of their own) and without what
// lives only while the process does. Its active turn, when it has one, is
// kept without its response parts: the turn's start (the user's message)
// is durable from the moment it is announced; its content is in the
// chat's checkpoint.
type StoredChat struct {
	V     int             `json:"v"`
	State *wire.ChatState `json:"state"`
}

// SessionRow encodes a session's catalogue row from its state and its
// root-catalogue entry, and returns the row's Summary blob too.
func SessionRow(uri string, src *wire.SessionState, sum wire.SessionSummary, archivedAt int64) (store.Session, []byte, error) {
	st := *src
	st.Config, st.ActiveClients, st.InputNeeded = nil, nil, nil
	blob, err := json.Marshal(StoredSession{V: Format, Summary: sum, State: &st, ArchivedAt: archivedAt})
	if err != nil {
		return store.Session{}, nil, fmt.Errorf("encoding session %s for the state store: %w", uri, err)
	}
	var cfg json.RawMessage
	if src.Config != nil {
		if cfg, err = json.Marshal(src.Config); err != nil {
			return store.Session{}, nil, fmt.Errorf("encoding the config of session %s for the state store: %w", uri, err)
		}
	}
	row := store.Session{
		URI:         uri,
		Provider:    src.Provider,
		Title:       src.Title,
		WorkingDirs: src.WorkingDirectories,
		Config:      cfg,
		Summary:     blob,
		Created:     ISOTime(sum.CreatedAt),
		Modified:    ISOTime(sum.ModifiedAt),
	}
	return row, blob, nil
}

// ChatRow encodes a chat's row from its state.
func ChatRow(session, uri string, src *wire.ChatState, agentSessionID string, created int64) (store.Chat, error) {
	st := *src
	st.Turns, st.TurnsNextCursor, st.BackgroundWork, st.SteeringMessage, st.QueuedMessages = nil, nil, nil, nil, nil
	if t := st.ActiveTurn; t != nil {
		st.ActiveTurn = &wire.ActiveTurn{ID: t.ID, StartedAt: t.StartedAt, Message: t.Message, ResponseParts: []wire.ResponsePart{}}
	}
	blob, err := json.Marshal(StoredChat{V: Format, State: &st})
	if err != nil {
		return store.Chat{}, fmt.Errorf("encoding chat %s for the state store: %w", uri, err)
	}
	return store.Chat{
		URI:          uri,
		SessionURI:   session,
		ACPSessionID: agentSessionID,
		Summary:      blob,
		Created:      time.UnixMilli(created),
	}, nil
}

// SummaryJSON extracts the summary's encoding from a session row's blob,
// to compare with the live summary's.
func SummaryJSON(blob []byte) []byte {
	var s struct {
		Summary json.RawMessage `json:"summary"`
	}
	if json.Unmarshal(blob, &s) != nil {
		return nil
	}
	return s.Summary
}

// TurnEnd is when a completed turn ended: its start plus its duration,
// else now.
func TurnEnd(t *wire.Turn, now int64) time.Time {
	if t.StartedAt != nil && t.Duration != nil {
		if start, ok := reducer.ParseTime(*t.StartedAt); ok {
			return time.UnixMilli(start + *t.Duration)
		}
	}
	return time.UnixMilli(now)
}

// ISOTime parses an AHP timestamp; the zero time when it does not parse.
func ISOTime(s string) time.Time {
	ms, ok := reducer.ParseTime(s)
	if !ok {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// DecodeSession reads a session's row as SessionRow wrote it: its state,
// with the config of the row's own column, and its catalogue entry.
func DecodeSession(s store.Session) (*StoredSession, error) {
	var ss StoredSession
	if err := json.Unmarshal(s.Summary, &ss); err != nil || ss.State == nil {
		return nil, fmt.Errorf("session %s in the state store cannot be read (%v)", s.URI, err)
	}
	if ss.V > Format {
		return nil, fmt.Errorf("session %s was stored by a newer ahp-bridge (format %d)", s.URI, ss.V)
	}
	if len(s.Config) > 0 {
		var cfg wire.SessionConfigState
		if err := json.Unmarshal(s.Config, &cfg); err != nil {
			return nil, fmt.Errorf("the config of session %s in the state store cannot be read: %w", s.URI, err)
		}
		ss.State.Config = &cfg
	}
	return &ss, nil
}

// DecodeChat reads a chat's state from its row as ChatRow wrote it.
func DecodeChat(row store.ChatRecord) (*wire.ChatState, error) {
	var sc StoredChat
	if err := json.Unmarshal(row.Summary, &sc); err != nil || sc.State == nil {
		return nil, fmt.Errorf("chat %s in the state store cannot be read (%v)", row.URI, err)
	}
	return sc.State, nil
}

// DecodeTurns reads a page of chat's stored turns.
func DecodeTurns(chat string, page []store.Turn) ([]wire.Turn, error) {
	turns := make([]wire.Turn, 0, len(page))
	for _, t := range page {
		var turn wire.Turn
		if err := json.Unmarshal(t.Data, &turn); err != nil {
			return nil, fmt.Errorf("turn %s of %s in the state store cannot be read: %w", t.ID, chat, err)
		}
		turns = append(turns, turn)
	}
	return turns, nil
}

// RestartNoticeMeta marks the system notification that ends a turn the
// bridge's restart interrupted, for clients that localise it.
const RestartNoticeMeta = "ahp-bridge/notice"

// RestartNotice is the text of that notification.
const RestartNotice = "ahp-bridge restarted while this turn was running; the turn was stopped here, and what the agent produced after the last save is lost."

// EndInterrupted ends a turn the process's end interrupted, as the
// reducer ends a cancelled one (its tool calls cancelled, its status
// settled), after a system notification that says what happened. at is
// the turn as last saved, savedAt when that was, which is when it ended
// as far as anyone can tell.
func EndInterrupted(st *wire.ChatState, at *wire.ActiveTurn, savedAt int64, clock reducer.Clock) {
	st.ActiveTurn = at
	notice := &wire.SystemNotificationResponsePart{
		Kind:    wire.ResponsePartKindSystemNotification,
		Content: wire.PlainText(RestartNotice),
		Meta:    map[string]any{RestartNoticeMeta: "bridgeRestarted"},
	}
	reducer.Chat(st, wire.Action(&wire.ChatResponsePartAction{TurnID: at.ID, Part: wire.NewResponsePart(notice)}), clock)
	dur := int64(0)
	if start, ok := reducer.ParseTime(at.StartedAt); ok {
		dur = max(0, savedAt-start)
	}
	reducer.Chat(st, wire.Action(&wire.ChatTurnCancelledAction{TurnID: at.ID, Duration: dur}), clock)
	st.ActiveTurn = nil // in case the reducer did not recognise it
}
