// Package store keeps the bridge's sessions on disk, so that they survive a
// restart, a crash and an agent's death.
//
// It is independent of the AHP wire types: the host hands it JSON blobs
// (json.RawMessage) with a few fields it indexes, and gets the same bytes
// back. Store is the interface the host programs against; SQLite implements
// it in one file through the pure-Go driver modernc.org/sqlite, in WAL mode
// with synchronous=NORMAL: a committed transaction survives the process
// being killed; only an OS crash or power loss can take back the last ones
// (those since the last WAL checkpoint, which the store runs in the
// background about a second after commits).
//
// # What is kept, and when
//
//   - The session catalogue (PutSession, PutChat) and every completed turn
//     (AppendTurn) are written synchronously, each call one small
//     transaction: the host commits, then broadcasts, so a client never sees
//     what a restart would take back. A turn and the catalogue changes it
//     caused go in one TurnCommit.
//   - A streaming turn is checkpointed by a Checkpointer, off the caller's
//     goroutine, at least every 250 ms or after 64 KiB of new content,
//     several chats per transaction, only the newest state of each. A
//     checkpoint is incremental: the turn's growing texts are appended in
//     pieces (what they gained since the last write), the rest of the turn
//     is replaced. After a crash Store.Checkpoint returns what is left of
//     the turn; the host shows it as ended and commits it with AppendTurn,
//     which drops the checkpoint and its pieces.
//   - serverSeq is not written per action: SeqReserve keeps a stored
//     high-water mark a block ahead of the values handed out, and after a
//     restart the host continues above it. Bridges sharing the file each
//     reserve blocks of their own (SeqBlocks), so they never hand out the
//     same value. Its documentation states the rule.
//
// # Reading back
//
// Nothing is loaded at Open: ListSessions pages the catalogue (most recently
// modified first, as listSessions wants), GetSession returns one session
// with its chats, and Turns pages a chat's completed turns backwards from
// the newest (fetchTurns). Memory therefore follows what the host asks for,
// not the size of the history; SQLite's own page cache is bounded at 2 MiB
// per connection.
//
// # The file
//
// Open creates the file 0600 in a 0700 directory (DefaultPath says where).
// Any number of bridges may have it open at once (each editor window runs
// its own `serve --stdio`): every write is one transaction that takes
// SQLite's write lock at BEGIN and waits for it up to the busy timeout, and
// nothing read from the file is kept in memory across calls that another
// process's writes could make stale (the serverSeq reserve keeps only the
// blocks it reserved for itself). A session is driven by one
// bridge at a time, the one holding it (Claim, holders.go); a holder that
// exited, cleanly or not, is taken over. A change counter that every
// catalogue write raises (ChangeCount) lets the others notice new sessions
// and turns by reading one row.
//
// A file that is not a database is moved to state.db.corrupt-<UTC time>
// (with its -wal and -shm) and reported by SQLite.MovedAside; the bridge
// starts empty. A file written by a newer ahp-bridge is refused untouched,
// since that bridge may be running on it. Schema changes are forward
// migrations, one transaction each, which bridges opening a new file at
// once run exactly once.
//
// A failing write (a full disk, say) returns an error and leaves the store
// as it was; the next write that succeeds needs no repair. Store.Health
// tells the host whether writes are failing right now.
//
// EachSession, Show and Export serve the `ahp-bridge sessions` subcommand;
// Options.ReadOnly lets it read a file running bridges use.
package store
