package codec

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// Action translates an action a client of this dialect dispatched. An
// action the dialect does not have is rejected, even when the host would
// understand it: the sender's echo would be withheld by Envelope (it is not
// of its version), and a pending action that never reconciles is worse
// than a rejection. 0.9.0 spells every action it has the 1.0.0 way; 0.7.0
// spells four of them its own way.
func (c *downgrade) Action(channel string, action json.RawMessage) (string, json.RawMessage, error) {
	t := actionType(action)
	if !ActionKnownTo(t, c.v) {
		return "", nil, c.unknownAction(t)
	}
	var up func(map[string]any) error
	switch t {
	case "session/customizationToggled":
		if c.f.enabledFlag {
			up = func(a map[string]any) error {
				// A 0.7.0 client toggles the customization for the session
				// as a whole: the least specific scope, as for a client
				// plugin's flag (§11.2).
				if e, ok := a["enabled"]; ok {
					a["enablement"] = []any{globalEnablement(e)}
					delete(a, "enabled")
				}
				return nil
			}
		}
	case "session/activeClientSet":
		if c.f.enabledFlag {
			up = func(a map[string]any) error {
				for _, cu := range array(object(a["activeClient"])["customizations"]) {
					customizationUp(object(cu))
				}
				return nil
			}
		}
	case "terminal/claimed":
		if c.f.claimWithoutChat {
			up = func(a map[string]any) error { return c.claimUp(object(a["claim"])) }
		}
	case "annotations/set":
		if c.f.annotationTurnID {
			up = func(a map[string]any) error {
				an := object(a["annotation"])
				if an == nil {
					return nil
				}
				id, _ := an["turnId"].(string)
				delete(an, "turnId")
				o, err := c.annotationOrigin(channel, id)
				an["origin"] = o
				return err
			}
		}
	case "annotations/updated":
		if c.f.annotationTurnID {
			up = func(a map[string]any) error {
				id, ok := a["turnId"].(string)
				if !ok {
					return nil
				}
				delete(a, "turnId")
				o, err := c.annotationOrigin(channel, id)
				a["origin"] = o
				return err
			}
		}
	}
	if up == nil {
		return channel, action, nil
	}
	tree, err := decodeTree(action)
	a, ok := tree.(map[string]any)
	if err != nil || !ok {
		return "", nil, fmt.Errorf("malformed %s: %v", t, err)
	}
	if err := up(a); err != nil {
		return "", nil, fmt.Errorf("%s: %v", t, err)
	}
	out, err := wire.Marshal(a)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %v", t, err)
	}
	return channel, out, nil
}

// globalEnablement is the CustomizationEnablement of a pre-0.8.0 flag.
func globalEnablement(enabled any) map[string]any {
	return map[string]any{"kind": "global", "enabled": enabled}
}

// customizationUp is customization backwards, for what a 0.7.0 client
// publishes: a plugin's or MCP server's enabled flag becomes a global
// enablement, at every depth.
func customizationUp(m map[string]any) {
	if m == nil {
		return
	}
	switch m["type"] {
	case "plugin", "mcpServer":
		if e, ok := m["enabled"]; ok {
			m["enablement"] = []any{globalEnablement(e)}
			delete(m, "enabled")
		}
	}
	for _, ch := range array(m["children"]) {
		customizationUp(object(ch))
	}
}

// claimUp completes a TerminalClaim of a 0.7.0 client: since 0.9.0 a
// session claim names its chat, which before was always the session's
// default chat (the only one a claim could mean).
func (c *downgrade) claimUp(cl map[string]any) error {
	if cl["kind"] != "session" {
		return nil
	}
	if _, ok := cl["chat"]; ok {
		return nil
	}
	session, _ := cl["session"].(string)
	chat, ok := c.dir.DefaultChat(session)
	if !ok {
		return fmt.Errorf("the claim names %q, which is not a session", session)
	}
	cl["chat"] = chat
	return nil
}

// annotationOrigin is the AnnotationOrigin of a 0.7.0 annotation made on an
// annotations channel: the channel's session (its URI is the session's
// plus "/annotations"), the session's default chat (the only chat a 0.7.0
// turn id could name without one), and the turn, if any.
func (c *downgrade) annotationOrigin(channel, turnID string) (map[string]any, error) {
	session, ok := strings.CutSuffix(channel, "/annotations")
	if !ok || session == "" {
		return nil, fmt.Errorf("cannot tell the session of annotations channel %q", channel)
	}
	o := map[string]any{"session": session}
	if chat, ok := c.dir.DefaultChat(session); ok {
		o["chat"] = chat
	}
	if turnID != "" {
		o["turnId"] = turnID
	}
	return o, nil
}

// Request translates a request of this dialect. Commands are the same but
// for those a dialect lacks, which get MethodNotFound as any unknown
// method, and 0.7.0's createSession fork and createTerminal claim.
func (c *downgrade) Request(method string, params json.RawMessage) (string, json.RawMessage, *Error) {
	switch method {
	case wire.MethodMoveChat:
		return "", nil, Errorf(wire.CodeMethodNotFound, "%s does not exist in AHP %s", method, c.v)
	case wire.MethodListAutomationTriggerDefinitions, wire.MethodRunAutomation, wire.MethodFetchAutomationRuns:
		if c.f.noAutomations {
			return "", nil, Errorf(wire.CodeMethodNotFound, "%s does not exist in AHP %s", method, c.v)
		}
	case wire.MethodCreateSession:
		if !c.f.createSessionFork {
			break
		}
		// 0.9.0 removed createSession.fork: forking is createChat's now.
		// Before that, this bridge refused it; 1.0.0 params cannot carry
		// it, so refusing here keeps a fork from becoming a fresh session.
		var p map[string]json.RawMessage
		if err := json.Unmarshal(params, &p); err != nil {
			return "", nil, Errorf(wire.CodeInvalidParams, "createSession: %v", err)
		}
		if f, ok := p["fork"]; ok && string(f) != "null" {
			return "", nil, Errorf(wire.CodeInvalidParams, "forking sessions is not supported by this server")
		}
	case wire.MethodCreateTerminal:
		if !c.f.claimWithoutChat {
			break
		}
		tree, err := decodeTree(params)
		p, ok := tree.(map[string]any)
		if err != nil || !ok {
			return "", nil, Errorf(wire.CodeInvalidParams, "createTerminal: params are not an object: %v", err)
		}
		if err := c.claimUp(object(p["claim"])); err != nil {
			return "", nil, Errorf(wire.CodeInvalidParams, "createTerminal: %v", err)
		}
		out, err := wire.Marshal(p)
		if err != nil {
			return "", nil, Errorf(wire.CodeInternalError, "createTerminal: %v", err)
		}
		return method, out, nil
	}
	return method, params, nil
}
