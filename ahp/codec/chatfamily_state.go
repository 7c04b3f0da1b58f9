package codec

// The rewrites below work in place on decoded JSON trees (see chatFamily)
// and take the objects they rewrite as maps that may be nil: a member that
// is absent or not an object is left alone, since what the host sends is
// valid 0.7.0 and anything else is not ours to repair.

// root rewrites a RootState.
func (c *chatFamily) root(r map[string]any) {
	for _, a := range array(r["agents"]) {
		c.agent(object(a))
	}
}

// agent prunes AgentInfo.capabilities to what the dialect can name
// (§4.2 #21): nothing for 0.5.0, multipleChats.fork for 0.5.1–0.6.0. A
// bare multipleChats stays: it alone means "several chats".
func (c *chatFamily) agent(a map[string]any) {
	caps := object(a["capabilities"])
	if caps == nil {
		return
	}
	if c.f.noAgentCapabilities {
		delete(a, "capabilities")
		return
	}
	if c.f.singleWorkingDirectory {
		delete(caps, "multipleWorkingDirectories")
	}
	if c.f.noSideChats {
		if mc := object(caps["multipleChats"]); mc != nil {
			delete(mc, "sideChat")
		}
	}
}

// sessionSummary rewrites a SessionSummary, a Partial<SessionSummary> or
// the SessionMetadata of a SessionState.
func (c *chatFamily) sessionSummary(s map[string]any) {
	c.workingDirectory(s)
}

// session rewrites a SessionState.
func (c *chatFamily) session(s map[string]any) {
	c.sessionSummary(s)
	for _, ch := range array(s["chats"]) {
		c.chatSummary(object(ch))
	}
	list, ok := s["inputNeeded"].([]any)
	if !ok {
		return
	}
	if c.f.noInputNeeded {
		delete(s, "inputNeeded")
		return
	}
	kept := list[:0]
	for _, r := range list {
		if c.inputNeeded(object(r)) {
			kept = append(kept, r)
		}
	}
	if len(kept) == 0 {
		// The older reducers drop the member when the list empties.
		delete(s, "inputNeeded")
		return
	}
	s["inputNeeded"] = kept
}

// inputNeeded rewrites one SessionInputRequest; false when the dialect
// cannot name its kind (toolAuthentication before 0.6.0, §4.2 #11). Such a
// session shows InProgress where 0.7.0 shows InputNeeded, and the entry's
// later session/inputNeededRemoved is a no-op for these reducers.
func (c *chatFamily) inputNeeded(r map[string]any) bool {
	if c.f.noAuthRequired && r["kind"] == "toolAuthentication" {
		return false
	}
	c.toolCall(object(r["toolCall"]))
	return true
}

// chatSummary rewrites a ChatSummary, a Partial<ChatSummary> or the summary
// members of a ChatState. A side chat's origin goes: the dialect has no way
// to say it, and a fork it is not (§4.2 #3).
func (c *chatFamily) chatSummary(s map[string]any) {
	c.workingDirectory(s)
	if c.f.noSideChats {
		if o := object(s["origin"]); o != nil && o["kind"] == "sideChat" {
			delete(s, "origin")
		}
	}
}

// workingDirectory replaces workingDirectories by its first entry (§4.2 #1).
// An empty list becomes no workingDirectory at all, which these dialects
// read as "inherit the session's" — the nearest they can say.
func (c *chatFamily) workingDirectory(m map[string]any) {
	if !c.f.singleWorkingDirectory {
		return
	}
	wds, ok := m["workingDirectories"]
	if !ok {
		return
	}
	delete(m, "workingDirectories")
	if list := array(wds); len(list) > 0 {
		m["workingDirectory"] = list[0]
	}
}

// chat rewrites a ChatState.
func (c *chatFamily) chat(ch map[string]any) {
	c.chatSummary(ch)
	if c.f.pagedFetchTurns {
		delete(ch, "turnsNextCursor")
	}
	for _, t := range array(ch["turns"]) {
		c.turn(object(t), false)
	}
	if requests := c.turn(object(ch["activeTurn"]), true); len(requests) > 0 {
		ch["inputRequests"] = requests
	}
	c.message(object(object(ch["steeringMessage"])["message"]))
	for _, q := range array(ch["queuedMessages"]) {
		c.message(object(object(q)["message"]))
	}
	c.message(object(ch["draft"]))
}

// turn rewrites a Turn or an ActiveTurn. Before 0.6.0 a live input request
// is no response part but an entry of ChatState.inputRequests (§4.2 #10):
// unresolved parts leave every turn, and those of the active turn are
// returned for the caller to file there. Resolved parts stay for 0.5.2
// and leave for the dialects that have no such part.
func (c *chatFamily) turn(t map[string]any, active bool) (requests []any) {
	if t == nil {
		return nil
	}
	c.message(object(t["message"]))
	parts, ok := t["responseParts"].([]any)
	if !ok {
		return nil
	}
	kept := parts[:0]
	for _, p := range parts {
		pm := object(p)
		switch pm["kind"] {
		case "inputRequest":
			if !c.f.inputRequestsOnChat {
				break
			}
			if _, resolved := pm["response"]; !resolved {
				if active {
					requests = append(requests, pm["request"])
				}
				continue
			}
			if !c.f.resolvedInputParts {
				continue
			}
		case "toolCall":
			c.toolCall(object(pm["toolCall"]))
		}
		kept = append(kept, p)
	}
	t["responseParts"] = kept
	return requests
}

// message rewrites a Message's attachments.
func (c *chatFamily) message(m map[string]any) {
	list := array(m["attachments"])
	for i, a := range list {
		if at := object(a); at != nil {
			list[i] = c.attachment(at)
		}
	}
}

// attachment rewrites a chat attachment, unknown before 0.7.0, as a simple
// one that keeps what the user saw (§4.2 #4).
func (c *chatFamily) attachment(a map[string]any) map[string]any {
	if !c.f.noChatAttachments || a["type"] != "chat" {
		return a
	}
	s := map[string]any{"type": "simple", "label": a["label"]}
	for _, k := range [...]string{"range", "displayKind", "_meta"} {
		if v, ok := a[k]; ok {
			s[k] = v
		}
	}
	return s
}

// toolCall rewrites a ToolCallState.
func (c *chatFamily) toolCall(tc map[string]any) {
	if tc == nil {
		return
	}
	if c.f.noAuthRequired && tc["status"] == "auth-required" {
		// The call is still under way as far as these dialects can tell
		// (§4.2 #12); the challenge reaches them as auth/required.
		tc["status"] = "running"
		delete(tc, "auth")
	}
	c.toolInput(tc)
	c.toolContent(tc)
	if s := object(tc["userSuggestion"]); s != nil {
		c.message(s)
	}
}

// toolInput drops a toolInput that is a ContentRef where the dialect wants
// a string (§4.2 #5): the codec cannot read the referenced content, and an
// absent input is valid everywhere.
func (c *chatFamily) toolInput(m map[string]any) {
	if !c.f.stringToolInput {
		return
	}
	if in, ok := m["toolInput"]; ok {
		if _, isString := in.(string); !isString {
			delete(m, "toolInput")
		}
	}
}

// toolContent rewrites the "content" list (ToolResultContent[]) of m: the
// command outcome a terminal block carries since 0.7.0 leaves it, and 0.5.2
// and 0.6.0 get it back as a terminalComplete block appended to the list,
// where their producers put it (§4.2 #8).
func (c *chatFamily) toolContent(m map[string]any) {
	list, ok := m["content"].([]any)
	if !ok {
		return
	}
	var complete []any
	for _, b := range list {
		bm := object(b)
		if bm["type"] != "terminal" {
			continue
		}
		result, ok := bm["result"]
		if !ok {
			continue
		}
		delete(bm, "result")
		if !c.f.terminalCompleteBlocks {
			continue
		}
		tc := map[string]any{"type": "terminalComplete"}
		if r, ok := bm["resource"]; ok {
			tc["resource"] = r
		}
		for k, v := range object(result) {
			switch k {
			case "exitCode", "preview", "truncated":
				tc[k] = v
			}
		}
		complete = append(complete, tc)
	}
	if len(complete) > 0 {
		m["content"] = append(list, complete...)
	}
}

// foldTerminalComplete is toolContent backwards, for the results of tools a
// 0.5.2 or 0.6.0 client ran: each terminalComplete block becomes the result
// of the terminal block with the same resource (its cwd has no 0.7.0 home),
// or, with no such block, a text block with what it says.
func (c *chatFamily) foldTerminalComplete(m map[string]any) {
	list, ok := m["content"].([]any)
	if !ok {
		return
	}
	terminals := map[any]map[string]any{}
	for _, b := range list {
		if bm := object(b); bm["type"] == "terminal" {
			if r, ok := bm["resource"].(string); ok {
				terminals[r] = bm
			}
		}
	}
	kept := list[:0]
	for _, b := range list {
		bm := object(b)
		if bm["type"] != "terminalComplete" {
			kept = append(kept, b)
			continue
		}
		result := map[string]any{}
		for _, k := range [...]string{"exitCode", "preview", "truncated"} {
			if v, ok := bm[k]; ok {
				result[k] = v
			}
		}
		if r, ok := bm["resource"].(string); ok && terminals[r] != nil {
			terminals[r]["result"] = result
			continue
		}
		if text := terminalCompleteText(bm); text != "" {
			kept = append(kept, map[string]any{"type": "text", "text": text})
		}
	}
	m["content"] = kept
}

// terminalCompleteText says in words what a terminalComplete block without
// a terminal says: its output preview, else its exit code.
func terminalCompleteText(b map[string]any) string {
	if p, ok := b["preview"].(string); ok && p != "" {
		return p
	}
	if code, ok := b["exitCode"]; ok {
		return "exit code " + numberText(code)
	}
	return ""
}
