// Package tui is the line-oriented terminal client behind `ahp-bridge
// client` and `ahp-bridge demo`. It creates or joins one AHP session, sends
// a prompt to the session's default chat — queued behind the running turn
// when the chat is busy — or follows the session, prints what happens in
// the default chat as plain text, and lets the person at the terminal
// answer the session's permission requests and questions (or answers them
// by policy: approve all, deny all).
//
// It speaks AHP 1.0.0 through package client. The protocol's shapes are
// read in a few places only, so that a port to another dialect touches
// little: view.go turns chat actions and state into what to show and the
// session's inputNeeded into questions, ask.go turns typed answers into
// actions, and Session's calls (StartTurn, SetPendingMessage, CancelTurn)
// say what the client asks for. The event loop and the renderer's layout
// work on plain values.
package tui
