package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// This file serves `ahp-bridge sessions list|show|export|delete`: list is
// EachSession, show is Show, export is Export, and delete is
// Store.DeleteSession.

// EachSession calls fn for every stored session, most recently modified
// first, reading the catalogue a page at a time. It stops at fn's first
// error and returns it.
func EachSession(ctx context.Context, st Store, fn func(Session) error) error {
	q := ListQuery{Limit: MaxPageSize}
	for {
		page, err := st.ListSessions(ctx, q)
		if err != nil {
			return err
		}
		for _, s := range page.Sessions {
			if err := fn(s); err != nil {
				return err
			}
		}
		if page.NextCursor == "" {
			return nil
		}
		q.Cursor = page.NextCursor
	}
}

// SessionInfo is what `sessions show` prints: the catalogue row and, per
// chat, how much history it holds and whether a turn was streaming.
type SessionInfo struct {
	Session Session
	Chats   []ChatInfo
}

// ChatInfo describes one chat of a SessionInfo.
type ChatInfo struct {
	ChatRecord
	// ActiveTurn is the chat's checkpoint without its data, or nil.
	ActiveTurn *ActiveTurnInfo
}

// ActiveTurnInfo describes a stored checkpoint.
type ActiveTurnInfo struct {
	TurnID  string
	Updated time.Time
	Bytes   int
}

// Show gathers what `sessions show` prints for one session.
func Show(ctx context.Context, st Store, uri string) (SessionInfo, error) {
	rec, err := st.GetSession(ctx, uri)
	if err != nil {
		return SessionInfo{}, err
	}
	info := SessionInfo{Session: rec.Session}
	for _, c := range rec.Chats {
		ci := ChatInfo{ChatRecord: c}
		cp, err := st.Checkpoint(ctx, c.URI)
		switch {
		case err == nil:
			n := len(cp.Data)
			for _, t := range cp.Texts {
				n += len(t.Text)
			}
			ci.ActiveTurn = &ActiveTurnInfo{TurnID: cp.TurnID, Updated: cp.Updated, Bytes: n}
		case !errors.Is(err, ErrNotFound):
			return SessionInfo{}, err
		}
		info.Chats = append(info.Chats, ci)
	}
	return info, nil
}

// ExportFormat and ExportVersion identify the export document. A change
// that removes or redefines a field raises the version; adding a field does
// not.
const (
	ExportFormat  = "ahp-bridge/session-export"
	ExportVersion = 1
)

// SessionExport is one session as a single JSON document: the catalogue row,
// then each chat with all its completed turns, oldest first, and the
// checkpoint of its active turn if one was stored. The shape is stable:
//
//	{
//	  "format": "ahp-bridge/session-export",
//	  "version": 1,
//	  "session": {
//	    "uri": "…", "provider": "…", "title": "…",
//	    "workingDirectories": ["…"],
//	    "config": {…},                        // omitted when absent
//	    "summary": {…},                       // omitted when absent
//	    "created": "RFC 3339 UTC", "modified": "RFC 3339 UTC"
//	  },
//	  "chats": [{
//	    "uri": "…",
//	    "acpSessionId": "…",                  // omitted when empty
//	    "created": "RFC 3339 UTC",
//	    "summary": {…},                       // omitted when absent
//	    "turns": [{"id": "…", "endedAt": "RFC 3339 UTC", "turn": {…}}],
//	    "activeTurn": {"turnId": "…", "updated": "RFC 3339 UTC", "state": {…}}  // omitted when none
//	  }]
//	}
//
// "turn", "state", "config" and "summary" are the JSON the host stored,
// unchanged but for whitespace.
type SessionExport struct {
	Format  string          `json:"format"`
	Version int             `json:"version"`
	Session ExportedSession `json:"session"`
	Chats   []ExportedChat  `json:"chats"`
}

// ExportedSession is the catalogue row of a SessionExport.
type ExportedSession struct {
	URI                string          `json:"uri"`
	Provider           string          `json:"provider"`
	Title              string          `json:"title"`
	WorkingDirectories []string        `json:"workingDirectories"`
	Config             json.RawMessage `json:"config,omitempty"`
	Summary            json.RawMessage `json:"summary,omitempty"`
	Created            time.Time       `json:"created"`
	Modified           time.Time       `json:"modified"`
}

// ExportedChat is one chat of a SessionExport.
type ExportedChat struct {
	URI          string              `json:"uri"`
	ACPSessionID string              `json:"acpSessionId,omitempty"`
	Created      time.Time           `json:"created"`
	Summary      json.RawMessage     `json:"summary,omitempty"`
	Turns        []ExportedTurn      `json:"turns"`
	ActiveTurn   *ExportedActiveTurn `json:"activeTurn,omitempty"`
}

// ExportedTurn is one completed turn of an ExportedChat.
type ExportedTurn struct {
	ID      string          `json:"id"`
	EndedAt time.Time       `json:"endedAt"`
	Turn    json.RawMessage `json:"turn"`
}

// ExportedActiveTurn is the checkpoint of an ExportedChat's active turn.
type ExportedActiveTurn struct {
	TurnID  string          `json:"turnId"`
	Updated time.Time       `json:"updated"`
	State   json.RawMessage `json:"state"`
}

// Export reads one session whole. A blob that is not valid JSON is reported
// by name rather than failing the encoder later with no clue where.
func Export(ctx context.Context, st Store, uri string) (*SessionExport, error) {
	rec, err := st.GetSession(ctx, uri)
	if err != nil {
		return nil, fmt.Errorf("exporting: %w", err)
	}
	s := rec.Session
	dirs := s.WorkingDirs
	if dirs == nil {
		dirs = []string{}
	}
	doc := &SessionExport{
		Format: ExportFormat, Version: ExportVersion,
		Session: ExportedSession{
			URI: s.URI, Provider: s.Provider, Title: s.Title, WorkingDirectories: dirs,
			Config: orNull(s.Config), Summary: orNull(s.Summary), Created: s.Created, Modified: s.Modified,
		},
		Chats: []ExportedChat{},
	}
	if err := validJSON(s.Config, "the config of session %s", uri); err != nil {
		return nil, err
	}
	if err := validJSON(s.Summary, "the summary of session %s", uri); err != nil {
		return nil, err
	}
	for _, c := range rec.Chats {
		ec := ExportedChat{URI: c.URI, ACPSessionID: c.ACPSessionID, Created: c.Created, Summary: orNull(c.Summary), Turns: []ExportedTurn{}}
		if err := validJSON(c.Summary, "the summary of chat %s", c.URI); err != nil {
			return nil, err
		}
		// Pages come newest first; collect them and lay them out oldest
		// first.
		var pages [][]Turn
		q := TurnQuery{Limit: MaxPageSize}
		for {
			page, err := st.Turns(ctx, c.URI, q)
			if err != nil {
				return nil, fmt.Errorf("exporting session %s: %w", uri, err)
			}
			pages = append(pages, page.Turns)
			if page.NextCursor == "" {
				break
			}
			q.Cursor = page.NextCursor
		}
		for i := len(pages) - 1; i >= 0; i-- {
			for _, t := range pages[i] {
				if err := validJSON(t.Data, "turn %s of chat %s", t.ID, c.URI); err != nil {
					return nil, err
				}
				ec.Turns = append(ec.Turns, ExportedTurn{ID: t.ID, EndedAt: t.EndedAt, Turn: orNull(t.Data)})
			}
		}
		cp, err := st.Checkpoint(ctx, c.URI)
		switch {
		case err == nil:
			if err := validJSON(cp.Data, "the active turn %s of chat %s", cp.TurnID, c.URI); err != nil {
				return nil, err
			}
			state := cp.Data
			if len(state) > 0 {
				// The texts its checkpoints appended go back in place.
				if state, err = cp.Merged(); err != nil {
					return nil, fmt.Errorf("exporting session %s: %w", uri, err)
				}
			}
			ec.ActiveTurn = &ExportedActiveTurn{TurnID: cp.TurnID, Updated: cp.Updated, State: orNull(state)}
		case !errors.Is(err, ErrNotFound):
			return nil, fmt.Errorf("exporting session %s: %w", uri, err)
		}
		doc.Chats = append(doc.Chats, ec)
	}
	return doc, nil
}

// Encode writes the export as indented JSON followed by a newline.
func (e *SessionExport) Encode(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		return fmt.Errorf("writing the export of session %s: %w", e.Session.URI, err)
	}
	return nil
}

// validJSON accepts absent (empty) or valid JSON.
func validJSON(b json.RawMessage, what string, args ...any) error {
	if len(b) == 0 || json.Valid(b) {
		return nil
	}
	return fmt.Errorf("exporting: %s is not valid JSON", fmt.Sprintf(what, args...))
}

// orNull turns an empty blob into nil, which encodes as null (or is omitted)
// instead of failing the encoder.
func orNull(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return b
}
