package reducer070

import (
	"github.com/ahp-bridge/ahp-bridge/ahp/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/v070/wire"
	wire100 "github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// A session's status follows the same rules in AHP 0.7.0 and 1.0.0, on the
// same status bits, but for one thing 0.8.0 changed: a toolClientExecution
// entry of inputNeeded is work a client does, not a question to the user.
// So WithInputNeeded and the aggregation over the chat catalogue are the
// 1.0.0 reducer's (they read statuses, modifiedAt and resources, the same
// in both versions), and only the two rules that read inputNeeded,
// settleActivity and SessionSummaryStatus, are written here as 0.7.0 has
// them. The official 0.7.0 fixtures keep them honest as 0.7.0 rules.

// WithInputNeeded is reducer.WithInputNeeded: status with its activity bits
// following whether the session has outstanding input requests, the rule of
// session/inputNeededSet and session/inputNeededRemoved.
func WithInputNeeded(status wire.SessionStatus, needed bool) wire.SessionStatus {
	return wire.SessionStatus(reducer.WithInputNeeded(wire100.SessionStatus(status), needed))
}

// AggregateStatus is reducer.AggregateStatus: the status a session summary
// shows for a session whose own status is session and whose chat catalogue
// is chats.
func AggregateStatus(session wire.SessionStatus, chats []wire.ChatSummary, defaultChat string) wire.SessionStatus {
	return wire.SessionStatus(reducer.AggregateStatus(wire100.SessionStatus(session), summaries100(chats), defaultChat))
}

// summaries100 are chats as the 1.0.0 aggregation reads them: resource,
// status and modifiedAt.
func summaries100(chats []wire.ChatSummary) []wire100.ChatSummary {
	out := make([]wire100.ChatSummary, len(chats))
	for i, c := range chats {
		out[i] = wire100.ChatSummary{Resource: c.Resource, Status: wire100.SessionStatus(c.Status), ModifiedAt: c.ModifiedAt}
	}
	return out
}

// settleActivity ends the InProgress WithInputNeeded leaves once the last
// input was given, when no chat of the catalogue is in progress any more:
// the rule ahp/reducer applies (see its settleActivity, issue 26), kept here
// so that the 0.7.0 projection of the host's state and a 0.7.0 client's
// reduced state agree. A session without chats keeps the specification's
// fallback, and any activity other than a bare InProgress is left alone.
func settleActivity(s *wire.SessionState) {
	if s.Status.Activity() != wire.SessionStatusInProgress || len(s.Chats) == 0 || len(s.InputNeeded) > 0 {
		return
	}
	for _, c := range s.Chats {
		if c.Status.Has(wire.SessionStatusInProgress) {
			return
		}
	}
	def := ""
	if s.DefaultChat != nil {
		def = *s.DefaultChat
	}
	s.Status = AggregateStatus(s.Status, s.Chats, def)
}

// SessionSummaryStatus returns the status the root catalogue shows for s:
// AggregateStatus over its chats and default chat, with InputNeeded promoted
// while s.InputNeeded is not empty (the host mirrors every open chat-level
// block there, and may raise session-level ones, e.g. an MCP server waiting
// for authentication, that no chat's status shows). A nil s has the zero
// status.
func SessionSummaryStatus(s *wire.SessionState) wire.SessionStatus {
	if s == nil {
		return 0
	}
	def := ""
	if s.DefaultChat != nil {
		def = *s.DefaultChat
	}
	status := AggregateStatus(s.Status, s.Chats, def)
	if len(s.InputNeeded) > 0 {
		status = status.WithActivity(wire.SessionStatusInputNeeded)
	}
	return status
}
