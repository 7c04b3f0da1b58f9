package host

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

func TestEncodeActionMatchesMarshal(t *testing.T) {
	for _, a := range []any{
		&wire.ChatDeltaAction{TurnID: "t<1>", PartID: "p&1", Content: "hello \"world\"\n\u2028\xff"},
		&wire.ChatReasoningAction{TurnID: "t1", PartID: "p1", Content: ""},
		&wire.ChatDeltaAction{Type: "ignored: encoding sets it", TurnID: "t", PartID: "p", Content: "x"},
		wire.ChatDeltaAction{TurnID: "value, not pointer", PartID: "p", Content: "x"},
		(*wire.ChatDeltaAction)(nil),
		(*wire.ChatReasoningAction)(nil),
		&wire.ChatDeltaAction{TurnID: "t", PartID: "p", Content: "with _meta: json.Marshal", Meta: map[string]any{"k": "<v>"}},
		&wire.ChatTurnCompleteAction{TurnID: "other actions take json.Marshal"},
	} {
		sa := wire.StateAction{Value: a}
		want, wantErr := json.Marshal(sa)
		got, err := encodeAction(sa)
		require.Equal(t, wantErr == nil, err == nil)
		require.Equal(t, string(want), string(got))
	}
}

func BenchmarkEncodeDelta(b *testing.B) {
	a := wire.Action(&wire.ChatDeltaAction{TurnID: "t1", PartID: "p1", Content: strings.Repeat("x", 64)})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := encodeAction(a); err != nil {
			b.Fatal(err)
		}
	}
}
