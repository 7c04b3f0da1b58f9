package reducer070

import (
	"slices"

	"github.com/ahp-bridge/ahp-bridge/ahp/v070/wire"
)

// Session applies a to the session state s. The session reducer keeps no
// timestamps and only moves the activity bits of status through inputNeeded:
// a session's activity is its chats' (see AggregateStatus), which the chat
// reducer computes.
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
		s.Lifecycle = wire.SessionLifecycleCreationFailed
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
		s.Status = WithInputNeeded(s.Status, true)
	case *wire.SessionInputNeededRemovedAction:
		i := inputNeededIndex(s, a.ID)
		if i < 0 {
			return
		}
		s.InputNeeded = slices.Delete(s.InputNeeded, i, i+1)
		if len(s.InputNeeded) == 0 {
			s.InputNeeded = nil
		}
		s.Status = WithInputNeeded(s.Status, len(s.InputNeeded) > 0)
		settleActivity(s)

	// Customizations, top-level entries and containers' children by id.
	case *wire.SessionCustomizationsChangedAction:
		s.Customizations = clone(a.Customizations)
	case *wire.SessionCustomizationToggledAction:
		toggleCustomization(s, a.ID, a.Enabled)
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
