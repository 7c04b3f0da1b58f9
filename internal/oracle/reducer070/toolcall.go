package reducer070

import (
	"encoding/json"

	"github.com/ahp-bridge/ahp-bridge/ahp/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/v070/wire"
	wire100 "github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// AHP 0.7.0 and 1.0.0 change a tool call by the same rules (the 1.0.0
// reducer began as a port of this one, and its tool call code stayed the
// same letter for letter), and a tool call and the actions on it have the
// same JSON in both versions. So the oracle does not keep a copy of those
// rules: it applies the 1.0.0 reducer's (reducer.ToolCall,
// reducer.CancelUnfinishedToolCall) to the tool call read as 1.0.0 JSON,
// and reads the result back as 0.7.0. What keeps them honest as 0.7.0
// rules is the official 0.7.0 fixtures (fixtures_test.go), which run
// through here; TestToolCallJSONIsTheSame checks the JSON premise. A
// future 1.x rule that 0.7.0 does not have would fail those fixtures, and
// would then need a rule of its own here.

// toolCallRule returns the 0.7.0 rule of the tool call action a, for
// chatUpdateToolCall: the 1.0.0 rule, through JSON. An action that does
// not read as 1.0.0 changes nothing.
func toolCallRule(a wire.StateAction) func(wire.ToolCallState) (wire.ToolCallState, bool) {
	var a100 wire100.StateAction
	ok := through(a, &a100)
	return func(tc wire.ToolCallState) (wire.ToolCallState, bool) {
		var tc100 wire100.ToolCallState
		if !ok || !through(tc, &tc100) {
			return tc, false
		}
		return back(reducer.ToolCall(tc100, a100))
	}
}

// toolCallForceCancel cancels (reason skipped) a tool call that has not
// finished when its turn ends: reducer.CancelUnfinishedToolCall, through
// JSON.
func toolCallForceCancel(tc wire.ToolCallState) (wire.ToolCallState, bool) {
	var tc100 wire100.ToolCallState
	if !through(tc, &tc100) {
		return tc, false
	}
	return back(reducer.CancelUnfinishedToolCall(tc100))
}

// back reads a tool call the 1.0.0 rules changed as 0.7.0; an unchanged
// one, or one that does not read back, is no change.
func back(tc100 wire100.ToolCallState, changed bool) (wire.ToolCallState, bool) {
	var tc wire.ToolCallState
	if !changed || !through(tc100, &tc) {
		return tc, false
	}
	return tc, true
}

// through decodes the JSON encoding of from into to, reporting whether
// both steps worked.
func through(from, to any) bool {
	b, err := json.Marshal(from)
	return err == nil && json.Unmarshal(b, to) == nil
}

// ToolCallID returns the id of a tool call in any status, including one
// this package does not know (read from its raw JSON). ok is false when tc
// holds no tool call or an unknown one without a toolCallId.
func ToolCallID(tc wire.ToolCallState) (string, bool) {
	if raw, isRaw := tc.Value.(json.RawMessage); isRaw {
		return chatRawString(raw, "toolCallId")
	}
	if tc.Value == nil || tc.Status() == "" {
		return "", false // no tool call, a nil variant pointer, or not a variant at all
	}
	return tc.ToolCallID(), true
}
