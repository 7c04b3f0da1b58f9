// Package tui is the line-oriented terminal client behind `ahp-bridge
// client` and `ahp-bridge demo`. It creates or joins one AHP session, sends
// a prompt — queued behind the running turn when the session is busy — or
// follows the session, prints what happens as plain text, and lets the
// person at the terminal answer permission requests and questions (or
// answers them by policy: approve all, deny all).
//
// The AHP 0.3.0 shapes are read in a few places only, so that a port to
// another dialect touches little: view.go turns actions and state into what
// to show, ask.go turns typed answers into actions, and Session's
// dispatches (turnStarted, pendingMessageSet, turnCancelled) say what the
// client asks for. The event loop and the renderer's layout work on plain
// values.
package tui
