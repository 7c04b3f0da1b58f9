// Package persist is what the AHP host keeps in its state store
// (package store) and how: the JSON of a session's and a chat's rows, a
// completed turn's encoding (written in slices, never held twice), a
// streaming turn's incremental checkpoint snapshots, one write of a
// session's batch in order, the decoding of what comes back after a
// restart (an interrupted turn ended with a notice), and the store as the
// host uses it: every write timed, and a warning while writes fail.
//
// It holds no lock of the host and knows nothing of its sessions,
// channels, connections or sequencer: the host (package host) decides
// when something is written, under a session's lock, hands persist the
// states to encode, and writes the result off the lock through Store
// (its pipeline.go and persist.go).
//
//   - due.go: what an action makes durable (ChatDue, SessionDue);
//   - store.go: Store, the observed store, and its failure Warning;
//   - rows.go: session and chat rows, their decoding, interrupted turns;
//   - turn.go: completed turns' encodings and checkpoint snapshots;
//   - batch.go: a session's Batch and its write;
//   - catalogue.go: listSessions' walk of the stored catalogue;
//   - clients.go: clients' records (their dialect and subscriptions),
//     written by one writer.
package persist
