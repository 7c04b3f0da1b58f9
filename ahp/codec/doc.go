// Package codec decides what each connection's protocol version sees.
//
// The host keeps one authoritative state in the newest dialect it speaks
// (Current: root, sessions, chats per session, terminals, …) and encodes every
// frame in it. A connection negotiates one version at `initialize`
// (Negotiate: the highest version offered that this bridge speaks); its codec
// then translates at the connection edge: inbound requests and actions up to
// the current dialect, outbound frames down to the connection's, withholding
// what that version does not know (ActionKnownTo, NotificationKnownTo). The
// sequencer never knows which versions are connected, and the next protocol
// version is a new codec plus the new state, not a second host.
//
// The versions spoken are listed once, in registry.go.
package codec
