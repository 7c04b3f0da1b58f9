package reducer070

import (
	"math"

	"github.com/ahp-bridge/ahp-bridge/ahp/v070/wire"
)

// WithInputNeeded returns status with its activity bits following whether
// the session has outstanding input requests (SessionState.inputNeeded), the
// rule the session reducer applies on session/inputNeededSet and
// session/inputNeededRemoved:
//
//   - needed: the activity becomes InputNeeded, whatever it was;
//   - not needed: only the input-needed bit is cleared. InputNeeded includes
//     InProgress, so a session that was waiting falls back to InProgress (its
//     turn goes on), while Idle or Error stay as they are.
//
// The IsRead and IsArchived flags, and bits this package does not know, are
// kept.
func WithInputNeeded(status wire.SessionStatus, needed bool) wire.SessionStatus {
	if needed {
		return status.WithActivity(wire.SessionStatusInputNeeded)
	}
	return status.Without(wire.SessionStatusInputNeeded &^ wire.SessionStatusInProgress)
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

// AggregateChat returns the index in chats of the chat a session summary
// mirrors (its activity bits and its activity string), or -1 when there are
// no chats. AHP 0.7.0 (SessionSummary; spec/session-channel.md, "Chat
// aggregation") names it:
//
//  1. if any chat needs input (InputNeeded), a chat that needs input;
//  2. else, if any chat is in error (the Error bit), a chat in error;
//  3. else the default chat.
//
// Within each rule the default chat is preferred when it qualifies, so the
// summary follows the chat the user addresses by default; otherwise the most
// recently modified qualifying chat is taken. When defaultChat is "" or names
// no chat in the catalogue, rule 3 takes the most recently modified chat.
//
// Two things the specification leaves open are decided here. InputNeeded
// outranks Error: a chat waiting for the user is the one thing on the list
// the user can act on now, and the error is still shown once the input is
// given. And chats are ordered by modifiedAt as a time (see ParseTime), a
// modifiedAt that does not parse counting as older than any that does, and
// ties going to the chat later in the catalogue, i.e. the one added last.
func AggregateChat(chats []wire.ChatSummary, defaultChat string) int {
	i, _ := aggregateSource(chats, defaultChat)
	return i
}

// AggregateStatus returns the status a session summary shows for a session
// whose own status is session and whose chat catalogue is chats, following
// the rules of AggregateChat: the activity bits (Idle, Error, InProgress,
// InputNeeded) are the promoted ones (InputNeeded, else Error) or the chosen
// chat's; the IsRead and IsArchived flags, which are session-scoped, and any
// bits this package does not know come from session. With no chats there is
// nothing to derive the activity from, and session is returned as it is.
//
// The session's own activity bits are not an input: they are what a previous
// aggregation or inputNeeded produced, and feeding them back would keep an
// InputNeeded alive after every chat moved on. Use SessionSummaryStatus to
// take a session's inputNeeded list into account.
func AggregateStatus(session wire.SessionStatus, chats []wire.ChatSummary, defaultChat string) wire.SessionStatus {
	i, activity := aggregateSource(chats, defaultChat)
	if i < 0 {
		return session
	}
	return session.WithActivity(activity)
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

// LatestModifiedAt returns the latest modifiedAt of chats, the session
// summary's modifiedAt once it has chats, ordered as AggregateChat orders
// them; ok is false when there are no chats.
func LatestModifiedAt(chats []wire.ChatSummary) (modifiedAt string, ok bool) {
	i := latestChat(chats, func(wire.ChatSummary) bool { return true })
	if i < 0 {
		return "", false
	}
	return chats[i].ModifiedAt, true
}

// aggregateSource returns the chat AggregateChat names and the activity bits the
// summary takes from it, or -1 when there are no chats.
func aggregateSource(chats []wire.ChatSummary, defaultChat string) (int, wire.SessionStatus) {
	needsInput := func(c wire.ChatSummary) bool { return c.Status.Has(wire.SessionStatusInputNeeded) }
	if i := preferDefaultChat(chats, defaultChat, needsInput); i >= 0 {
		return i, wire.SessionStatusInputNeeded
	}
	failed := func(c wire.ChatSummary) bool { return c.Status.Has(wire.SessionStatusError) }
	if i := preferDefaultChat(chats, defaultChat, failed); i >= 0 {
		return i, wire.SessionStatusError
	}
	i := preferDefaultChat(chats, defaultChat, func(wire.ChatSummary) bool { return true })
	if i < 0 {
		return -1, 0
	}
	return i, chats[i].Status.Activity()
}

// preferDefaultChat returns the default chat if it satisfies ok, else the most
// recently modified chat that does, else -1.
func preferDefaultChat(chats []wire.ChatSummary, defaultChat string, ok func(wire.ChatSummary) bool) int {
	if defaultChat != "" {
		for i, c := range chats {
			if c.Resource == defaultChat && ok(c) {
				return i
			}
		}
	}
	return latestChat(chats, ok)
}

// latestChat returns the most recently modified chat that satisfies ok, or -1.
func latestChat(chats []wire.ChatSummary, ok func(wire.ChatSummary) bool) int {
	best, bestAt := -1, int64(math.MinInt64)
	for i, c := range chats {
		if !ok(c) {
			continue
		}
		at, parsed := ParseTime(c.ModifiedAt)
		if !parsed {
			at = math.MinInt64
		}
		if best < 0 || at >= bestAt {
			best, bestAt = i, at
		}
	}
	return best
}
