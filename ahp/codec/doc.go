// Package codec decides what each connection's protocol version sees.
//
// The host keeps one authoritative state in the newest dialect it speaks
// (Current, AHP 1.0.0: root, sessions, chats per session, terminals, …) and
// encodes every frame in it. A connection negotiates one version at
// `initialize` (Negotiate: the highest version offered that some dialect
// accepts, 1.0.0 and 0.9.0 as caret ranges); its codec then translates at
// the connection edge: inbound requests and actions up to the current
// dialect, outbound frames down to the connection's, withholding what that
// version does not know (ActionKnownTo, NotificationKnownTo). The sequencer
// never knows which versions are connected, and the next protocol version is
// a new codec plus the new state, not a second host.
//
// The codecs form a chain. 0.9.0 and 0.7.0 translate from 1.0.0 directly
// (downgrade.go); 0.6.0, the 0.5 family (chatfamily.go) and 0.3.0 (v030*.go)
// translate from 0.7.0, and are served by composing them with the 0.7.0
// codec (compose.go).
//
// The versions spoken are listed once, in registry.go.
package codec
