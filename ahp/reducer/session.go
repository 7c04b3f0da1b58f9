package reducer

import (
	"slices"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// Session applies a to the session state s. The session reducer keeps no
// timestamps and only moves the activity bits of status through inputNeeded:
// a session's activity is its chats' (see AggregateStatus), which the chat
// reducer computes; the InProgress an answered input leaves ends once no
// chat of the catalogue is in progress (settleActivity). Since 0.8.0 only
// inputNeeded entries that wait for the user count: a toolClientExecution
// entry is work delegated to a client, not a question, so it leaves the
// activity as it is.
func Session(s *wire.SessionState, a wire.StateAction, clock Clock) {
	if s == nil {
		return
	}
	switch a := actionValue(a).(type) {
	// Lifecycle. session/ready must not touch status: a provisional
	// session's first turn may already be running when it arrives.
	case *wire.SessionReadyAction:
		s.Lifecycle = wire.SessionLifecycleReady
	case *wire.SessionCreationFailedAction:
		// 0.9.0 renamed the lifecycle value creationFailed to failed.
		s.Lifecycle = wire.SessionLifecycleFailed
		s.CreationError = wire.Ptr(clone(a.Error))

	// The chat catalogue, keyed by chat URI.
	case *wire.SessionChatAddedAction:
		sum := clone(a.Summary)
		if i := sessionChatIndex(s, sum.Resource); i >= 0 {
			s.Chats[i] = sum
			return
		}
		s.Chats = append(s.Chats, sum)
	case *wire.SessionChatRemovedAction:
		i := sessionChatIndex(s, a.Chat)
		if i < 0 {
			return
		}
		s.Chats = slices.Delete(s.Chats, i, i+1)
		// A routing hint to a chat that no longer exists would send the
		// user's input nowhere.
		if s.DefaultChat != nil && *s.DefaultChat == a.Chat {
			s.DefaultChat = nil
		}
		settleActivity(s)
	case *wire.SessionChatUpdatedAction:
		if i := sessionChatIndex(s, a.Chat); i >= 0 {
			mergeChatSummary(&s.Chats[i], a.Changes)
			settleActivity(s)
		}
	case *wire.SessionChatsReorderedAction:
		sessionChatsReordered(s, a.Chats)
	case *wire.SessionDefaultChatChangedAction:
		// Whether the chat exists is the host's to check (it rejects the
		// action otherwise); the reducer records what was accepted.
		s.DefaultChat = clone(a.DefaultChat)

	// Metadata.
	case *wire.SessionTitleChangedAction:
		s.Title = a.Title
	case *wire.SessionIsReadChangedAction:
		s.Status = setSessionFlag(s.Status, wire.SessionStatusIsRead, a.IsRead)
	case *wire.SessionIsArchivedChangedAction:
		s.Status = setSessionFlag(s.Status, wire.SessionStatusIsArchived, a.IsArchived)
	case *wire.SessionActivityChangedAction:
		s.Activity = clone(a.Activity)
	case *wire.SessionChangesetsChangedAction:
		s.Changesets = clone(a.Changesets)
	case *wire.SessionConfigChangedAction:
		if s.Config == nil {
			return
		}
		s.Config.Values = mergeConfig(s.Config.Values, a.Config, a.Replace != nil && *a.Replace)
	case *wire.SessionMetaChangedAction:
		s.Meta = clone(a.Meta)
	case *wire.SessionServerToolsChangedAction:
		s.ServerTools = clone(a.Tools)

	// Active clients, keyed by clientId.
	case *wire.SessionActiveClientSetAction:
		c := clone(a.ActiveClient)
		if i := activeClientIndex(s, c.ClientID); i >= 0 {
			s.ActiveClients[i] = c
			return
		}
		s.ActiveClients = append(s.ActiveClients, c)
	case *wire.SessionActiveClientRemovedAction:
		if i := activeClientIndex(s, a.ClientID); i >= 0 {
			s.ActiveClients = slices.Delete(s.ActiveClients, i, i+1)
		}

	// Working directories: a set kept in the order directories were added.
	case *wire.SessionWorkingDirectorySetAction:
		if !slices.Contains(s.WorkingDirectories, a.Directory) {
			s.WorkingDirectories = append(s.WorkingDirectories, a.Directory)
		}
	case *wire.SessionWorkingDirectoryReplacedAction:
		replaceWorkingDirectory(s, a.Directory, a.Replacement)
	case *wire.SessionWorkingDirectoryRemovedAction:
		// The emptied set stays present ([]), unlike inputNeeded below,
		// whose absence is what "nothing outstanding" looks like.
		if i := slices.Index(s.WorkingDirectories, a.Directory); i >= 0 {
			s.WorkingDirectories = slices.Delete(s.WorkingDirectories, i, i+1)
		}

	// Session-level input requests, keyed by id; the activity bits follow.
	case *wire.SessionInputNeededSetAction:
		req := clone(a.Request)
		if i := inputNeededIndex(s, req.ID()); i >= 0 {
			s.InputNeeded[i] = req
		} else {
			s.InputNeeded = append(s.InputNeeded, req)
		}
		s.Status = WithInputNeeded(s.Status, inputAwaitsUser(s.InputNeeded))
		settleActivity(s)
	case *wire.SessionInputNeededRemovedAction:
		i := inputNeededIndex(s, a.ID)
		if i < 0 {
			return
		}
		s.InputNeeded = slices.Delete(s.InputNeeded, i, i+1)
		if len(s.InputNeeded) == 0 {
			s.InputNeeded = nil
		}
		s.Status = WithInputNeeded(s.Status, inputAwaitsUser(s.InputNeeded))
		settleActivity(s)

	// Customizations, top-level entries and containers' children by id.
	case *wire.SessionCustomizationsChangedAction:
		s.Customizations = clone(a.Customizations)
	case *wire.SessionCustomizationToggledAction:
		toggleCustomization(s, a.ID, a.Enablement)
	case *wire.SessionCustomizationUpdatedAction:
		c := clone(a.Customization)
		if i := topCustomization(s.Customizations, c.ID()); i >= 0 {
			s.Customizations[i] = c
			return
		}
		s.Customizations = append(s.Customizations, c)
	case *wire.SessionCustomizationRemovedAction:
		removeCustomization(s, a.ID)
	case *wire.SessionMcpServerStateChangedAction:
		updateMcpServer(s, a.ID, func(m *wire.McpServerCustomization) {
			m.State = clone(a.State)
			m.Channel = clone(a.Channel)
		})
	case *wire.SessionMcpServerStartRequestedAction:
		// Optimistic: the host confirms with mcpServerStateChanged. The old
		// channel belonged to the old process, so it goes.
		updateMcpServer(s, a.ID, func(m *wire.McpServerCustomization) {
			m.State = wire.NewMcpServerState(&wire.McpServerStartingState{Kind: wire.McpServerStatusStarting})
			m.Channel = nil
		})
	case *wire.SessionMcpServerBackgroundRequestedAction:
		// Optimistic, like the start and stop requests: only a server that
		// is starting and blocking stops blocking; the host may restore the
		// flag with mcpServerStateChanged.
		updateMcpServer(s, a.ID, func(m *wire.McpServerCustomization) {
			st, ok := wire.NewMcpServerState(m.State.Value).Value.(*wire.McpServerStartingState)
			if ok && st != nil && st.Blocking != nil && *st.Blocking {
				m.State = wire.NewMcpServerState(&wire.McpServerStartingState{Kind: wire.McpServerStatusStarting, Blocking: wire.Ptr(false)})
			}
		})
	case *wire.SessionMcpServerStopRequestedAction:
		updateMcpServer(s, a.ID, func(m *wire.McpServerCustomization) {
			m.State = wire.NewMcpServerState(&wire.McpServerStoppedState{Kind: wire.McpServerStatusStopped})
			m.Channel = nil
		})
	}
}

// setSessionFlag sets or clears the flag bits f of status.
func setSessionFlag(status, f wire.SessionStatus, set bool) wire.SessionStatus {
	if set {
		return status.With(f)
	}
	return status.Without(f)
}

// mergeChatSummary writes the fields present in changes onto sum. The
// resource is the catalogue key and never changes, so it is ignored.
func mergeChatSummary(sum *wire.ChatSummary, changes wire.PartialChatSummary) {
	c := clone(changes)
	if c.Title != nil {
		sum.Title = *c.Title
	}
	if c.Status != nil {
		sum.Status = *c.Status
	}
	if c.Activity != nil {
		sum.Activity = c.Activity
	}
	if c.ModifiedAt != nil {
		sum.ModifiedAt = *c.ModifiedAt
	}
	if c.Origin != nil {
		sum.Origin = c.Origin
	}
	if c.Interactivity != nil {
		sum.Interactivity = c.Interactivity
	}
	if c.WorkingDirectories != nil {
		sum.WorkingDirectories = c.WorkingDirectories
	}
	if c.Changes != nil {
		sum.Changes = c.Changes
	}
	if c.Movable != nil {
		sum.Movable = c.Movable
	}
}

// sessionChatsReordered puts the catalogue in the given order, keeping each
// summary as it is. The order must name every chat of the catalogue exactly
// once and nothing else; anything else is ignored whole, as the action's
// description asks (an order computed against a catalogue that has since
// changed would otherwise drop or invent chats).
func sessionChatsReordered(s *wire.SessionState, order []string) {
	if len(order) != len(s.Chats) {
		return
	}
	byURI := make(map[string]int, len(s.Chats))
	for i, c := range s.Chats {
		if _, dup := byURI[c.Resource]; dup {
			return // a catalogue with a repeated chat has no "exact set"
		}
		byURI[c.Resource] = i
	}
	chats := make([]wire.ChatSummary, 0, len(order))
	for _, uri := range order {
		i, ok := byURI[uri]
		if !ok {
			return // unknown, or named twice
		}
		delete(byURI, uri)
		chats = append(chats, s.Chats[i])
	}
	s.Chats = chats
}

// replaceWorkingDirectory is the compare-and-swap of
// session/workingDirectoryReplaced: nothing happens unless the set holds
// directory. Otherwise directory's entry becomes replacement, and the set
// stays a set: a replacement already listed before the target keeps its
// place and the target goes ([A, B, C] with C → A is [A, B]); one listed
// after it moves to the target's place ([A, B, C] with B → C is [A, C]).
// Every other directory keeps its relative order.
func replaceWorkingDirectory(s *wire.SessionState, directory, replacement string) {
	i := slices.Index(s.WorkingDirectories, directory)
	if i < 0 {
		return
	}
	// A new slice: the old one may be held by a snapshot being sent.
	dirs := make([]string, 0, len(s.WorkingDirectories))
	if j := slices.Index(s.WorkingDirectories, replacement); j >= 0 && j < i {
		dirs = append(dirs, s.WorkingDirectories[:i]...)
		s.WorkingDirectories = append(dirs, s.WorkingDirectories[i+1:]...)
		return
	}
	for k, d := range s.WorkingDirectories {
		switch {
		case k == i:
			dirs = append(dirs, replacement)
		case d != replacement:
			dirs = append(dirs, d)
		}
	}
	s.WorkingDirectories = dirs
}

// inputAwaitsUser reports whether any of the session's input requests waits
// for the user: every kind but toolClientExecution, unknown kinds included
// (a kind this package does not know is more likely a question than not).
func inputAwaitsUser(reqs []wire.SessionInputRequest) bool {
	for _, r := range reqs {
		if r.Kind() != string(wire.SessionInputRequestKindToolClientExecution) {
			return true
		}
	}
	return false
}

// sessionChatIndex returns the index of the chat uri in the catalogue, or -1.
func sessionChatIndex(s *wire.SessionState, uri string) int {
	return slices.IndexFunc(s.Chats, func(c wire.ChatSummary) bool { return c.Resource == uri })
}

// activeClientIndex returns the index of the active client id, or -1.
func activeClientIndex(s *wire.SessionState, id string) int {
	return slices.IndexFunc(s.ActiveClients, func(c wire.SessionActiveClient) bool { return c.ClientID == id })
}

// inputNeededIndex returns the index of the input request id, or -1.
func inputNeededIndex(s *wire.SessionState, id string) int {
	return slices.IndexFunc(s.InputNeeded, func(r wire.SessionInputRequest) bool { return r.ID() == id })
}
