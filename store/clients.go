package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Client is what the bridge remembers of an AHP client (schemaV4): the
// protocol dialect its connection negotiated and the channels it was
// subscribed to, so that a bridge restarted under it can answer its
// `reconnect` with snapshots in that dialect instead of "unknown client".
type Client struct {
	ID string
	// ProtocolVersion is the dialect the client negotiated ("0.7.0").
	ProtocolVersion string
	// Subscriptions are the channel URIs it was subscribed to, root first.
	Subscriptions []string
	// Seen is when the client was last connected.
	Seen time.Time
}

// MaxClientSubscriptions bounds the subscriptions kept of one client: a
// record is small whatever the client did.
const MaxClientSubscriptions = 1000

// PutClient implements Store.
func (s *SQLite) PutClient(ctx context.Context, c Client) error {
	if c.ID == "" {
		return errors.New("storing a client: it has no id")
	}
	subs := c.Subscriptions
	if subs == nil {
		subs = []string{}
	}
	if len(subs) > MaxClientSubscriptions {
		subs = subs[:MaxClientSubscriptions]
	}
	b, err := json.Marshal(subs)
	if err != nil {
		return fmt.Errorf("storing client %s: encoding its subscriptions: %w", c.ID, err)
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO clients (client_id, protocol_version, subscriptions, seen_ns)
			VALUES (?, ?, ?, ?)
			ON CONFLICT (client_id) DO UPDATE SET protocol_version = excluded.protocol_version,
				subscriptions = excluded.subscriptions, seen_ns = excluded.seen_ns`,
			c.ID, c.ProtocolVersion, b, toNS(c.Seen))
		return err
	})
	if err != nil {
		return fmt.Errorf("storing client %s: %w", c.ID, err)
	}
	return nil
}

// GetClient implements Store.
func (s *SQLite) GetClient(ctx context.Context, clientID string) (Client, error) {
	if err := s.usable(false); err != nil {
		return Client{}, err
	}
	c := Client{ID: clientID}
	var subs []byte
	var seen int64
	err := s.r.QueryRowContext(ctx, `SELECT protocol_version, subscriptions, seen_ns FROM clients WHERE client_id = ?`, clientID).
		Scan(&c.ProtocolVersion, &subs, &seen)
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err == nil {
		if uerr := json.Unmarshal(subs, &c.Subscriptions); uerr != nil {
			err = fmt.Errorf("decoding its subscriptions: %w", uerr)
		}
	}
	if err != nil {
		return Client{}, fmt.Errorf("reading client %s: %w", clientID, err)
	}
	c.Seen = fromNS(seen)
	return c, nil
}

// PruneClients implements Store.
func (s *SQLite) PruneClients(ctx context.Context, before time.Time) (int, error) {
	var n int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM clients WHERE seen_ns < ?`, toNS(before))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("deleting the clients not seen since %s: %w", before.UTC().Format(time.RFC3339), err)
	}
	return int(n), nil
}
