package codec

// actionIntroducedIn maps every action type of the chat-channel dialect to
// the protocol version that introduced it. Up to 0.7.0 the source is
// ACTION_INTRODUCED_IN in types/version/registry.ts of the AHP 0.7.0 release
// (commit ea6fae67). The 0.8.0–1.0.0 entries are the versions that RELEASED
// each action (the client CHANGELOGs, docs/protocol-versions.md §9 and
// §11.1), not the registry's labels at 0383429, which tag the 1.0.0
// additions 0.9.0 and the canvases 0.10.0: a 0.9.0 client's own types do not
// have them, so "never an action newer than the version it negotiated" means
// the release. A connection is never sent an action newer than the version
// it negotiated; an action type missing here is treated as unknown to every
// older version (it can only be newer than this table).
var actionIntroducedIn = map[string]Version{
	"root/agentsChanged":         {0, 1, 0},
	"root/activeSessionsChanged": {0, 1, 0},
	"root/terminalsChanged":      {0, 1, 0},
	"root/configChanged":         {0, 1, 0},

	"session/ready":                   {0, 1, 0},
	"session/creationFailed":          {0, 1, 0},
	"session/chatAdded":               {0, 4, 0},
	"session/chatRemoved":             {0, 4, 0},
	"session/chatUpdated":             {0, 4, 0},
	"session/defaultChatChanged":      {0, 4, 0},
	"session/titleChanged":            {0, 1, 0},
	"session/serverToolsChanged":      {0, 1, 0},
	"session/activeClientSet":         {0, 5, 0},
	"session/activeClientRemoved":     {0, 5, 0},
	"session/workingDirectorySet":     {0, 7, 0},
	"session/workingDirectoryRemoved": {0, 7, 0},
	"session/inputNeededSet":          {0, 5, 1},
	"session/inputNeededRemoved":      {0, 5, 1},
	"session/customizationsChanged":   {0, 1, 0},
	"session/customizationToggled":    {0, 1, 0},
	"session/customizationUpdated":    {0, 1, 0},
	"session/customizationRemoved":    {0, 2, 0},
	"session/mcpServerStateChanged":   {0, 3, 0},
	"session/mcpServerStartRequested": {0, 5, 2},
	"session/mcpServerStopRequested":  {0, 5, 2},
	"session/isReadChanged":           {0, 1, 0},
	"session/isArchivedChanged":       {0, 1, 0},
	"session/activityChanged":         {0, 1, 0},
	"session/changesetsChanged":       {0, 2, 0},
	"session/configChanged":           {0, 1, 0},
	"session/metaChanged":             {0, 1, 0},

	"chat/turnStarted":             {0, 4, 0},
	"chat/delta":                   {0, 4, 0},
	"chat/responsePart":            {0, 4, 0},
	"chat/toolCallStart":           {0, 4, 0},
	"chat/toolCallDelta":           {0, 4, 0},
	"chat/toolCallReady":           {0, 4, 0},
	"chat/toolCallConfirmed":       {0, 4, 0},
	"chat/toolCallComplete":        {0, 4, 0},
	"chat/toolCallResultConfirmed": {0, 4, 0},
	"chat/toolCallContentChanged":  {0, 4, 0},
	"chat/toolCallAuthRequired":    {0, 6, 0},
	"chat/toolCallAuthResolved":    {0, 6, 0},
	"chat/turnComplete":            {0, 4, 0},
	"chat/turnCancelled":           {0, 4, 0},
	"chat/error":                   {0, 4, 0},
	"chat/activityChanged":         {0, 5, 0},
	"chat/workingDirectorySet":     {0, 7, 0},
	"chat/workingDirectoryRemoved": {0, 7, 0},
	"chat/usage":                   {0, 4, 0},
	"chat/reasoning":               {0, 4, 0},
	"chat/pendingMessageSet":       {0, 4, 0},
	"chat/pendingMessageRemoved":   {0, 4, 0},
	"chat/queuedMessagesReordered": {0, 4, 0},
	"chat/draftChanged":            {0, 5, 0},
	"chat/inputRequested":          {0, 4, 0},
	"chat/inputAnswerChanged":      {0, 4, 0},
	"chat/inputCompleted":          {0, 4, 0},
	"chat/truncated":               {0, 4, 0},
	"chat/turnsLoaded":             {0, 5, 1},

	"changeset/statusChanged":          {0, 2, 0},
	"changeset/fileSet":                {0, 2, 0},
	"changeset/fileRemoved":            {0, 2, 0},
	"changeset/filesReviewChanged":     {0, 6, 0},
	"changeset/contentChanged":         {0, 4, 0},
	"changeset/operationsChanged":      {0, 2, 0},
	"changeset/operationStatusChanged": {0, 3, 0},
	"changeset/cleared":                {0, 2, 0},

	"annotations/set":          {0, 4, 0},
	"annotations/updated":      {0, 4, 0},
	"annotations/removed":      {0, 4, 0},
	"annotations/entrySet":     {0, 4, 0},
	"annotations/entryRemoved": {0, 4, 0},

	"terminal/data":                      {0, 1, 0},
	"terminal/input":                     {0, 1, 0},
	"terminal/resized":                   {0, 1, 0},
	"terminal/claimed":                   {0, 1, 0},
	"terminal/titleChanged":              {0, 1, 0},
	"terminal/cwdChanged":                {0, 1, 0},
	"terminal/exited":                    {0, 1, 0},
	"terminal/cleared":                   {0, 1, 0},
	"terminal/commandDetectionAvailable": {0, 1, 0},
	"terminal/commandExecuted":           {0, 1, 0},
	"terminal/commandFinished":           {0, 1, 0},

	"resourceWatch/changed": {0, 2, 0},

	// 0.8.0 (registry label 0.8.0 too).
	"session/workingDirectoryReplaced": {0, 8, 0},

	// 0.9.0: turn resume and the automation channels. The registry tags the
	// automation actions 0.8.0, but they shipped in 0.9.0.
	"chat/turnResume":                     {0, 9, 0},
	"automation/createRequested":          {0, 9, 0},
	"automation/updateRequested":          {0, 9, 0},
	"automation/set":                      {0, 9, 0},
	"automation/removed":                  {0, 9, 0},
	"automationRun/lifecycleChanged":      {0, 9, 0},
	"automationRun/sessionSet":            {0, 9, 0},
	"automationRun/sessionRemoved":        {0, 9, 0},
	"automationRun/primarySessionChanged": {0, 9, 0},
	"automationRun/cancelRequested":       {0, 9, 0},

	// 1.0.0: the registry tags all of these 0.9.0 (canvases 0.10.0).
	"session/chatsReordered":               {1, 0, 0},
	"session/mcpServerBackgroundRequested": {1, 0, 0},
	"chat/isReadChanged":                   {1, 0, 0},
	"chat/isArchivedChanged":               {1, 0, 0},
	"chat/movableChanged":                  {1, 0, 0},
	"chat/changesetsChanged":               {1, 0, 0},
	"chat/backgroundWorkSet":               {1, 0, 0},
	"chat/backgroundWorkRemoved":           {1, 0, 0},
	"chat/canvasesChanged":                 {1, 0, 0},
	"canvas/stateChanged":                  {1, 0, 0},
}

// notificationIntroducedIn is NOTIFICATION_INTRODUCED_IN of the same file:
// the server-to-client protocol notifications besides `action`. 0.8.0–1.0.0
// added none (auth/required changed its payload in 0.8.0, which the 0.7.0
// codec translates). The 1.1.0 ones are listed so that nothing 1.1.0 is
// known to any dialect spoken here, Current included: a 1.1.0 client gets
// the 1.0.0 dialect (registry.go) and must never receive them.
var notificationIntroducedIn = map[string]Version{
	"root/sessionAdded":          {0, 1, 0},
	"root/sessionRemoved":        {0, 1, 0},
	"root/sessionSummaryChanged": {0, 1, 0},
	"root/progress":              {0, 5, 0},
	"auth/required":              {0, 1, 0},
	"otlp/exportLogs":            {0, 2, 0},
	"otlp/exportTraces":          {0, 2, 0},
	"otlp/exportMetrics":         {0, 2, 0},

	"channel/frame":    {1, 1, 0},
	"channel/credit":   {1, 1, 0},
	"channel/ready":    {1, 1, 0},
	"channel/reset":    {1, 1, 0},
	"channel/snapshot": {1, 1, 0},
	"tcp/data":         {1, 1, 0},
	"tcp/eof":          {1, 1, 0},
}

// ActionKnownTo reports whether a connection speaking v may be sent an
// action of type t. Unknown types are known to nobody but the current
// version, which passes them through verbatim.
func ActionKnownTo(t string, v Version) bool {
	in, ok := actionIntroducedIn[t]
	if !ok {
		return v == Current
	}
	return in.Compare(v) <= 0
}

// NotificationKnownTo reports whether a connection speaking v may be sent
// the protocol notification method.
func NotificationKnownTo(method string, v Version) bool {
	in, ok := notificationIntroducedIn[method]
	if !ok {
		return v == Current
	}
	return in.Compare(v) <= 0
}
