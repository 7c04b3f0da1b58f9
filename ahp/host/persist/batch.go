package persist

import (
	"errors"

	"github.com/ahp-bridge/ahp-bridge/store"
)

// Batch is one write of a session and its chats: encoded by the host
// under the session's lock, written by WriteBatch after it released it.
type Batch struct {
	// PutCatalogue: the session's row and every chat's are rewritten
	// first.
	PutCatalogue bool
	Session      store.Session
	Chats        []store.Chat
	// Turns are the completed turns not stored yet, chat by chat.
	Turns []ChatTurns
}

// ChatTurns are completed turns of the chat whose row is Batch.Chats[Row],
// in order. A nil commit is a turn that could not be encoded: it is
// skipped (it would fail for ever), the next ones still go.
type ChatTurns struct {
	Row     int
	Commits []*store.TurnCommit
}

// BatchResult is what a batch's write stored.
type BatchResult struct {
	// Catalogue is set when the rows were written (PutSession).
	Catalogue bool
	// Rows are the chats (indexes in Batch.Chats) whose row a turn's
	// commit carried.
	Rows []int
	// Stored says, per Batch.Turns, how many of its turns were stored,
	// from the first.
	Stored []int
}

// WriteBatch writes a batch, in order: the rows when due, then each
// chat's turns, the last one of each chat with the rows it changed (one
// transaction), unless the rows were just written. It stops at the first
// failure (noted for the warning): what is left is for the session's
// next batch. It takes no lock: this is a session's I/O.
func (s *Store) WriteBatch(b *Batch) BatchResult {
	res := BatchResult{Stored: make([]int, len(b.Turns))}
	putRows := func() bool {
		ctx, cancel := WriteCtx()
		defer cancel()
		res.Catalogue = s.PutSession(ctx, b.Session, b.Chats...) == nil
		return res.Catalogue
	}
	if b.PutCatalogue && !putRows() {
		return res
	}
	for i, ct := range b.Turns {
		for j := 0; j < len(ct.Commits); j++ {
			c := ct.Commits[j]
			if c == nil {
				res.Stored[i]++
				continue
			}
			commit := *c
			if j == len(ct.Commits)-1 && !res.Catalogue {
				commit.Session, commit.Chat = &b.Session, &b.Chats[ct.Row]
			}
			ctx, cancel := WriteCtx()
			err := s.AppendTurn(ctx, commit)
			cancel()
			if errors.Is(err, store.ErrNotFound) && !res.Catalogue {
				// The chat's row is missing (the write that added it
				// failed): write the rows, then this turn again.
				if !putRows() {
					return res
				}
				j--
				continue
			}
			if err != nil {
				return res
			}
			res.Stored[i]++
			if commit.Chat != nil {
				res.Rows = append(res.Rows, ct.Row)
			}
		}
	}
	return res
}
