package host

import (
	"encoding/json"

	"github.com/ahp-bridge/ahp-bridge/ahp/host/internal/jsonstr"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// encodeAction returns exactly the bytes json.Marshal(a) returns. The
// streamed-text actions (chat/delta, chat/reasoning, without _meta) — nearly every
// action of a busy session — are written directly: through encoding/json
// they cost a reflective encode, a MarshalJSON call per level and a
// re-compaction of its output (over half the sequencer's time per chunk,
// docs/performance.md). Everything else goes through json.Marshal.
func encodeAction(a wire.StateAction) ([]byte, error) {
	switch v := a.Value.(type) {
	case *wire.ChatDeltaAction:
		if v != nil && len(v.Meta) == 0 {
			return appendTextAction(textActionBuf(v.TurnID, v.PartID, v.Content), wire.ActionTypeChatDelta, v.TurnID, v.PartID, v.Content), nil
		}
	case *wire.ChatReasoningAction:
		if v != nil && len(v.Meta) == 0 {
			return appendTextAction(textActionBuf(v.TurnID, v.PartID, v.Content), wire.ActionTypeChatReasoning, v.TurnID, v.PartID, v.Content), nil
		}
	}
	return json.Marshal(a)
}

// textActionBuf allocates room for a text action without escapes.
func textActionBuf(turnID, partID, content string) []byte {
	return make([]byte, 0, 80+len(turnID)+len(partID)+len(content))
}

// appendTextAction appends {"type":…,"turnId":…,"partId":…,"content":…},
// the field order of both action structs.
func appendTextAction(b []byte, typ wire.ActionType, turnID, partID, content string) []byte {
	b = append(b, `{"type":`...)
	b = jsonstr.Append(b, string(typ))
	b = append(b, `,"turnId":`...)
	b = jsonstr.Append(b, turnID)
	b = append(b, `,"partId":`...)
	b = jsonstr.Append(b, partID)
	b = append(b, `,"content":`...)
	b = jsonstr.Append(b, content)
	return append(b, '}')
}
