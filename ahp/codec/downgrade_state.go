package codec

// The rewrites below work in place on decoded JSON trees (see downgrade)
// and take the objects they rewrite as maps that may be nil: a member that
// is absent or not an object is left alone, since what the host sends is
// valid 1.0.0 and anything else is not ours to repair. Deleting from a nil
// map is a no-op, so chains through absent members are safe.

// root rewrites a RootState.
func (c *downgrade) root(r map[string]any) {
	for _, a := range array(r["agents"]) {
		c.agent(object(a))
	}
	for _, t := range array(r["terminals"]) {
		c.terminal(object(t))
	}
	c.configSchema(object(object(r["config"])["schema"]))
}

// agent rewrites an AgentInfo: its capabilities, its models' config
// schemas and the customizations it ships.
func (c *downgrade) agent(a map[string]any) {
	if a == nil {
		return
	}
	if c.f.noPrimaryReplacement {
		delete(object(object(a["capabilities"])["multipleWorkingDirectories"]), "primaryReplacement")
	}
	for _, m := range array(a["models"]) {
		c.configSchema(object(object(m)["configSchema"]))
	}
	for _, cu := range array(a["customizations"]) {
		c.customization(object(cu))
	}
}

// configSchema rewrites a ConfigSchema or a SessionConfigSchema (their
// property schemas differ in members no dialect here lacks).
func (c *downgrade) configSchema(s map[string]any) {
	for _, p := range object(s["properties"]) {
		c.propertySchema(object(p))
	}
}

// propertySchema drops the array bounds 1.0.0 added, at every depth.
func (c *downgrade) propertySchema(p map[string]any) {
	if p == nil || !c.f.noItemBounds {
		return
	}
	delete(p, "minItems")
	delete(p, "maxItems")
	c.propertySchema(object(p["items"]))
	c.propertySchema(object(p["additionalProperties"]))
	for _, q := range object(p["properties"]) {
		c.propertySchema(object(q))
	}
}

// customization rewrites a Customization, a ChildCustomization or a
// ClientPluginCustomization, with its children. Before 0.8.0 plugins and
// MCP servers carry a required `enabled`: the effective value of their
// scoped enablement, which only the list's first (most specific) entry
// decides.
func (c *downgrade) customization(m map[string]any) {
	if m == nil {
		return
	}
	switch m["type"] {
	case "plugin", "mcpServer":
		if c.f.enabledFlag {
			m["enabled"] = effectiveEnablement(m["enablement"])
			delete(m, "enablement")
			delete(m, "childEnablement")
		}
	}
	if m["type"] == "mcpServer" {
		c.mcpState(object(m["state"]))
	}
	for _, ch := range array(m["children"]) {
		c.customization(object(ch))
	}
}

// effectiveEnablement is `enablement[0]?.enabled ?? true`.
func effectiveEnablement(v any) any {
	if list := array(v); len(list) > 0 {
		if e, ok := object(list[0])["enabled"].(bool); ok {
			return e
		}
	}
	return true
}

// mcpState rewrites an McpServerState.
func (c *downgrade) mcpState(s map[string]any) {
	if c.f.noMcpBlocking {
		delete(s, "blocking")
	}
}

// activeClient rewrites a SessionActiveClient.
func (c *downgrade) activeClient(ac map[string]any) {
	for _, cu := range array(ac["customizations"]) {
		c.customization(object(cu))
	}
}

// sessionSummary rewrites a SessionSummary or a Partial<SessionSummary>:
// the compact chat catalogue is 1.0.0's, the origin 0.9.0's.
func (c *downgrade) sessionSummary(s map[string]any) {
	if c.f.noChatCatalogue {
		delete(s, "chats")
		delete(s, "defaultChat")
	}
	if c.f.noSessionOrigin {
		delete(s, "origin")
	}
}

// session rewrites a SessionState. Its chats and defaultChat are the
// chat-channel model's own (0.4.0), not the catalogue's.
func (c *downgrade) session(s map[string]any) {
	if c.f.noSessionOrigin {
		delete(s, "origin")
	}
	if c.f.creationFailed && s["lifecycle"] == "failed" {
		s["lifecycle"] = "creationFailed"
	}
	for _, ch := range array(s["chats"]) {
		c.chatSummary(object(ch))
	}
	c.configSchema(object(object(s["config"])["schema"]))
	for _, cu := range array(s["customizations"]) {
		c.customization(object(cu))
	}
	for _, ac := range array(s["activeClients"]) {
		c.activeClient(object(ac))
	}
}

// chatSummary rewrites a ChatSummary, a Partial<ChatSummary> or the summary
// members of a ChatState.
func (c *downgrade) chatSummary(s map[string]any) {
	if c.f.noChatExtras {
		delete(s, "changes")
		delete(s, "movable")
	}
}

// chat rewrites a ChatState. Changesets, background work and canvases of a
// chat are 1.0.0's (the session's changesets are another, older list).
func (c *downgrade) chat(ch map[string]any) {
	c.chatSummary(ch)
	if c.f.noChatExtras {
		delete(ch, "changesets")
		delete(ch, "backgroundWork")
		delete(ch, "canvases")
	}
	for _, t := range array(ch["turns"]) {
		c.turn(object(t))
	}
	if at := object(ch["activeTurn"]); at != nil && c.f.errorOnTurn {
		// Only a resumed turn holds error parts while active, and the
		// bridge resumes none; 0.7.0 has no place for them there.
		if parts, ok := at["responseParts"].([]any); ok {
			at["responseParts"], _ = withoutErrorParts(parts)
		}
	}
}

// turn rewrites a Turn: before 0.9.0 its error is Turn.error, not a
// response part (§12). The bridge ends a failed turn with one error part,
// at its end; should a turn hold several, the last (the latest failure) is
// the turn's error and all leave the parts.
func (c *downgrade) turn(t map[string]any) {
	if t == nil || !c.f.errorOnTurn {
		return
	}
	parts, ok := t["responseParts"].([]any)
	if !ok {
		return
	}
	kept, last := withoutErrorParts(parts)
	t["responseParts"] = kept
	if last != nil {
		t["error"] = last
	}
}

// withoutErrorParts removes the error parts from a list of response parts
// (in place: the tree is the codec's own) and returns the error of the last.
func withoutErrorParts(parts []any) (kept []any, lastError any) {
	kept = parts[:0]
	for _, p := range parts {
		pm := object(p)
		if pm["kind"] == "error" {
			if e, ok := pm["error"]; ok {
				lastError = e
			}
			continue
		}
		kept = append(kept, p)
	}
	return kept, lastError
}

// terminal rewrites a TerminalState or a TerminalInfo: before 0.9.0 an
// exited terminal says so only by its exitCode, and a running one by its
// absence.
func (c *downgrade) terminal(t map[string]any) {
	if t == nil {
		return
	}
	if lc, ok := t["lifecycle"]; ok && c.f.terminalExitCode {
		delete(t, "lifecycle")
		if code, ok := object(lc)["exitCode"]; ok {
			t["exitCode"] = code
		}
	}
	c.claim(object(t["claim"]))
}

// claim rewrites a TerminalClaim: a session claim names no chat before
// 0.9.0.
func (c *downgrade) claim(cl map[string]any) {
	if c.f.claimWithoutChat && cl["kind"] == "session" {
		delete(cl, "chat")
	}
}

// changeset rewrites a ChangesetState.
func (c *downgrade) changeset(s map[string]any) { c.changesetStatus(s) }

// changesetStatus rewrites the status member of a ChangesetState or a
// changeset/statusChanged. "recomputing" (1.0.0) is computing again, which
// is what the older dialects can say.
func (c *downgrade) changesetStatus(m map[string]any) {
	if c.f.noRecomputing && m["status"] == "recomputing" {
		m["status"] = "computing"
	}
}

// annotations rewrites an AnnotationsState.
func (c *downgrade) annotations(s map[string]any) {
	for _, a := range array(s["annotations"]) {
		c.annotation(object(a))
	}
}

// annotation rewrites an Annotation: before 0.9.0 it names its turn alone,
// and the turn id is required ("" for none).
func (c *downgrade) annotation(a map[string]any) {
	if a == nil || !c.f.annotationTurnID {
		return
	}
	o := a["origin"]
	delete(a, "origin")
	id, ok := object(o)["turnId"]
	if !ok {
		id = ""
	}
	a["turnId"] = id
}
