package wire

// clientDispatchable says, for every action type of AHP 1.0.0, whether a
// client may dispatch it (dispatchAction); the server alone produces the
// others. Like IS_CLIENT_DISPATCHABLE in the agent-host-protocol
// repository's types/action-origin.generated.ts, it lists every action
// type, so that a test can tell a new action type that nobody classified
// from a server-only one.
//
// The 0.7.0 action types keep the classification of ahp/v070/wire
// (transcribed from action-origin.generated.ts at ea6fae67, release 0.7.0).
// No 1.x action-origin.generated.ts could be read, so the 21 types added by
// 0.8.0–1.0.0 are classified from the 0.9-era port of the reducers in the
// .NET client (clients/dotnet/src/AgentHostProtocol/Reducers.cs, search
// index #57368073052: chat/turnResume, session/workingDirectoryReplaced and
// the automation requests are client actions) and from the descriptions in
// schema/actions.schema.json at 0383429 ("Dispatched by a client" for
// chat/isReadChanged and chat/isArchivedChanged; a client "requests" that the
// host background an MCP server's startup; session/chatsReordered is
// "host-emitted ... never originates from a client dispatch";
// automationRun/cancelRequested "is the only client-dispatchable
// automation-run action"). See docs/protocol-versions.md §11.1.
var clientDispatchable = map[ActionType]bool{
	ActionTypeRootAgentsChanged:                 false,
	ActionTypeRootActiveSessionsChanged:         false,
	ActionTypeRootTerminalsChanged:              false,
	ActionTypeRootConfigChanged:                 true,
	ActionTypeSessionReady:                      false,
	ActionTypeSessionCreationFailed:             false,
	ActionTypeSessionChatAdded:                  false,
	ActionTypeSessionChatRemoved:                false,
	ActionTypeSessionChatUpdated:                false,
	ActionTypeSessionDefaultChatChanged:         false,
	ActionTypeSessionTitleChanged:               true,
	ActionTypeSessionServerToolsChanged:         false,
	ActionTypeSessionActiveClientSet:            true,
	ActionTypeSessionActiveClientRemoved:        true,
	ActionTypeSessionWorkingDirectorySet:        true,
	ActionTypeSessionWorkingDirectoryRemoved:    true,
	ActionTypeSessionInputNeededSet:             false,
	ActionTypeSessionInputNeededRemoved:         false,
	ActionTypeSessionCustomizationsChanged:      false,
	ActionTypeSessionCustomizationToggled:       true,
	ActionTypeSessionCustomizationUpdated:       false,
	ActionTypeSessionCustomizationRemoved:       false,
	ActionTypeSessionMcpServerStateChanged:      false,
	ActionTypeSessionMcpServerStartRequested:    true,
	ActionTypeSessionMcpServerStopRequested:     true,
	ActionTypeSessionIsReadChanged:              true,
	ActionTypeSessionIsArchivedChanged:          true,
	ActionTypeSessionActivityChanged:            false,
	ActionTypeSessionChangesetsChanged:          false,
	ActionTypeSessionConfigChanged:              true,
	ActionTypeSessionMetaChanged:                false,
	ActionTypeChatTurnStarted:                   true,
	ActionTypeChatDelta:                         false,
	ActionTypeChatResponsePart:                  false,
	ActionTypeChatToolCallStart:                 false,
	ActionTypeChatToolCallDelta:                 false,
	ActionTypeChatToolCallReady:                 false,
	ActionTypeChatToolCallConfirmed:             true,
	ActionTypeChatToolCallComplete:              true,
	ActionTypeChatToolCallResultConfirmed:       true,
	ActionTypeChatToolCallContentChanged:        true,
	ActionTypeChatToolCallAuthRequired:          false,
	ActionTypeChatToolCallAuthResolved:          false,
	ActionTypeChatTurnComplete:                  false,
	ActionTypeChatTurnCancelled:                 true,
	ActionTypeChatError:                         false,
	ActionTypeChatActivityChanged:               false,
	ActionTypeChatWorkingDirectorySet:           true,
	ActionTypeChatWorkingDirectoryRemoved:       true,
	ActionTypeChatUsage:                         false,
	ActionTypeChatReasoning:                     false,
	ActionTypeChatPendingMessageSet:             true,
	ActionTypeChatPendingMessageRemoved:         true,
	ActionTypeChatQueuedMessagesReordered:       true,
	ActionTypeChatDraftChanged:                  true,
	ActionTypeChatInputRequested:                false,
	ActionTypeChatInputAnswerChanged:            true,
	ActionTypeChatInputCompleted:                true,
	ActionTypeChatTruncated:                     true,
	ActionTypeChatTurnsLoaded:                   false,
	ActionTypeChangesetStatusChanged:            false,
	ActionTypeChangesetFileSet:                  false,
	ActionTypeChangesetFileRemoved:              false,
	ActionTypeChangesetFilesReviewChanged:       true,
	ActionTypeChangesetContentChanged:           false,
	ActionTypeChangesetOperationsChanged:        false,
	ActionTypeChangesetOperationStatusChanged:   false,
	ActionTypeChangesetCleared:                  false,
	ActionTypeAnnotationsSet:                    true,
	ActionTypeAnnotationsUpdated:                true,
	ActionTypeAnnotationsRemoved:                true,
	ActionTypeAnnotationsEntrySet:               true,
	ActionTypeAnnotationsEntryRemoved:           true,
	ActionTypeTerminalData:                      false,
	ActionTypeTerminalInput:                     true,
	ActionTypeTerminalResized:                   true,
	ActionTypeTerminalClaimed:                   true,
	ActionTypeTerminalTitleChanged:              true,
	ActionTypeTerminalCwdChanged:                false,
	ActionTypeTerminalExited:                    false,
	ActionTypeTerminalCleared:                   true,
	ActionTypeTerminalCommandDetectionAvailable: false,
	ActionTypeTerminalCommandExecuted:           false,
	ActionTypeTerminalCommandFinished:           false,
	ActionTypeResourceWatchChanged:              false,

	// Added by 0.8.0–1.0.0.
	ActionTypeSessionChatsReordered:               false,
	ActionTypeSessionWorkingDirectoryReplaced:     true,
	ActionTypeSessionMcpServerBackgroundRequested: true,
	ActionTypeChatTurnResume:                      true,
	ActionTypeChatBackgroundWorkSet:               false,
	ActionTypeChatBackgroundWorkRemoved:           false,
	ActionTypeChatMovableChanged:                  false,
	ActionTypeChatChangesetsChanged:               false,
	ActionTypeChatCanvasesChanged:                 false,
	ActionTypeCanvasStateChanged:                  false,
	ActionTypeChatIsReadChanged:                   true,
	ActionTypeChatIsArchivedChanged:               true,
	ActionTypeAutomationCreateRequested:           true,
	ActionTypeAutomationUpdateRequested:           true,
	ActionTypeAutomationSet:                       false,
	ActionTypeAutomationRemoved:                   true,
	ActionTypeAutomationRunLifecycleChanged:       false,
	ActionTypeAutomationRunSessionSet:             false,
	ActionTypeAutomationRunSessionRemoved:         false,
	ActionTypeAutomationRunPrimarySessionChanged:  false,
	ActionTypeAutomationRunCancelRequested:        true,
}

// ClientDispatchable reports whether a client may dispatch an action of the
// given type (dispatchAction); unknown types are not dispatchable.
func ClientDispatchable(actionType string) bool {
	return clientDispatchable[ActionType(actionType)]
}
