package reducer

import "github.com/ahp-bridge/ahp-bridge/ahp/wire"

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
