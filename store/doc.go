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
//     restart the host continues above it. Its documentation states the rule.
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
// Open creates the file 0600 in a 0700 directory (DefaultPath says where),
// and locks it with an OS lock on a sidecar file, state.db.lock, holding the
// owner's pid: a second bridge on the same file fails with a *LockedError
// naming the file and that pid. A file that is not a database, or was
// written by a newer ahp-bridge, is moved to state.db.corrupt-<UTC time>
// (with its -wal and -shm) and reported by SQLite.MovedAside; the bridge
// starts empty. Schema changes are forward migrations, one transaction each.
//
// A failing write (a full disk, say) returns an error and leaves the store
// as it was; the next write that succeeds needs no repair. Store.Health
// tells the host whether writes are failing right now.
//
// EachSession, Show and Export serve the `ahp-bridge sessions` subcommand;
// Options.ReadOnly lets it read a file a running bridge holds.
package store
