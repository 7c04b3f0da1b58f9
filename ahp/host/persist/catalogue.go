package persist

import (
	"cmp"
	"context"

	"github.com/ahp-bridge/ahp-bridge/store"
)

// ListCursor is the host's listSessions cursor when the catalogue comes
// from the store: the last item served (M, R), after which the live sessions
// continue, and where the store's catalogue continues: after the page
// cursor S, skipping K rows.
type ListCursor struct {
	M string `json:"m"`
	R string `json:"r"`
	S string `json:"s,omitempty"`
	K int    `json:"k,omitempty"`
}

// After reports whether a catalogue entry sorts after the cursor's (the
// catalogue is ordered by modifiedAt, newest first, then by URI,
// descending, as the store orders it).
func (c ListCursor) After(modifiedAt, uri string) bool {
	return cmp.Or(-cmp.Compare(modifiedAt, c.M), -cmp.Compare(uri, c.R)) > 0
}

// CatalogueWalk walks the store's catalogue from a position (a page cursor
// and a number of rows to skip), one row at a time, and says where it is.
type CatalogueWalk struct {
	ctx    context.Context
	st     store.Store
	want   int // page size to ask for
	cursor string
	page   []store.Session
	next   string // the page's NextCursor
	i      int
	err    error
	loaded bool
}

func (r *CatalogueWalk) fill() {
	if r.loaded || r.err != nil {
		return
	}
	p, err := r.st.ListSessions(r.ctx, store.ListQuery{Cursor: r.cursor, Limit: r.want})
	if err != nil {
		r.err = err
		return
	}
	r.page, r.next, r.loaded = p.Sessions, p.NextCursor, true
}

// Peek returns the next row, or false at the end (or on an error).
func (r *CatalogueWalk) Peek() (store.Session, bool) {
	for {
		r.fill()
		if r.err != nil {
			return store.Session{}, false
		}
		if r.i < len(r.page) {
			return r.page[r.i], true
		}
		if r.next == "" {
			return store.Session{}, false
		}
		r.cursor, r.loaded, r.i = r.next, false, 0
	}
}

// Pop moves past the row Peek returned.
func (r *CatalogueWalk) Pop() { r.i++ }

// Position is where the walk continues: the page cursor and the rows of
// that page to skip.
func (r *CatalogueWalk) Position() (string, int) {
	if r.loaded && r.i >= len(r.page) && r.next != "" {
		return r.next, 0
	}
	return r.cursor, r.i
}

// WalkCatalogue starts a walk of st's catalogue after the page cursor
// cursor, skipping skip rows, asking for pages of want rows.
func WalkCatalogue(ctx context.Context, st store.Store, cursor string, skip, want int) *CatalogueWalk {
	return &CatalogueWalk{ctx: ctx, st: st, want: want, cursor: cursor, i: skip}
}

// Err is the error that ended the walk, if any.
func (r *CatalogueWalk) Err() error { return r.err }
