package backend

// AttachKind says how a backend session was attached to the agent's
// conversation.
type AttachKind string

// The ways a backend session attaches to the agent.
const (
	// AttachNew is a new conversation, as asked (no earlier one to resume).
	AttachNew AttachKind = "new"
	// AttachResumed continued an earlier conversation without replaying
	// it (ACP session/resume).
	AttachResumed AttachKind = "resumed"
	// AttachLoaded continued an earlier conversation that the agent
	// replayed (ACP session/load); the backend swallowed the replay.
	AttachLoaded AttachKind = "loaded"
	// AttachFresh is a new conversation where an earlier one was to be
	// continued: the agent does not remember the earlier turns.
	AttachFresh AttachKind = "fresh"
)

// Attached says which agent conversation a backend session now talks to:
// reported when the session is opened, and again when the backend had to
// re-attach it (the agent process died and was restarted). ID is the
// agent's id of the conversation, what SessionOptions.Resume takes to
// continue it after a restart of the bridge ("" when the backend has
// none). For AttachFresh, Reason says why the earlier conversation could
// not be continued, in words for the user.
type Attached struct {
	ID     string
	How    AttachKind
	Reason string
}

func (Attached) isEvent() {}
