package agentchan

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecodeFrame(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Frame
		wantErr string
	}{
		{
			name: "text",
			in:   `{"channel":"agent","type":"text","content":"hi","taskId":"t1","extra":1}`,
			want: Frame{Channel: "agent", Type: "text", Content: "hi", TaskID: "t1"},
		},
		{
			name: "tool invocation keeps args verbatim",
			in:   `{"channel":"agent","type":"tool_invocation","toolCallId":"c1","toolName":"bash","args":{"command":"ls"}}`,
			want: Frame{Channel: "agent", Type: "tool_invocation", ToolCallID: "c1", ToolName: "bash", Args: json.RawMessage(`{"command":"ls"}`)},
		},
		{
			name: "numeric ids become text",
			in:   `{"channel":"agent","type":"permission","requestId":42,"toolCallId":7.5,"taskId":1}`,
			want: Frame{Channel: "agent", Type: "permission", RequestID: "42", ToolCallID: "7.5", TaskID: "1"},
		},
		{
			name: "null fields are absent",
			in:   `{"channel":"agent","type":"result","summary":null,"result":null,"args":null}`,
			want: Frame{Channel: "agent", Type: "result"},
		},
		{
			name: "questions",
			in:   `{"channel":"agent","type":"question","questions":["a","b"]}`,
			want: Frame{Channel: "agent", Type: "question", Questions: []string{"a", "b"}},
		},
		{
			name: "lone question string",
			in:   `{"channel":"agent","type":"question","questions":"a"}`,
			want: Frame{Channel: "agent", Type: "question", Questions: []string{"a"}},
		},
		{
			name: "other channel keeps only channel and type",
			in:   `{"channel":"terminal","type":"output","content":5}`,
			want: Frame{Channel: "terminal", Type: "output"},
		},
		{name: "not json", in: `{"channel":`, wantErr: "not a JSON object"},
		{name: "array", in: `[1]`, wantErr: "not a JSON object"},
		{name: "null", in: `null`, wantErr: "JSON null"},
		{name: "no channel", in: `{"type":"text"}`, wantErr: `field "channel" is missing`},
		{name: "no type", in: `{"channel":"agent"}`, wantErr: `field "type" is missing`},
		{name: "empty type", in: `{"channel":"agent","type":""}`, wantErr: `field "type" is empty`},
		{name: "channel not a string", in: `{"channel":1,"type":"x"}`, wantErr: `field "channel" is a number, want a string`},
		{name: "content not a string", in: `{"channel":"agent","type":"text","content":{"a":1}}`, wantErr: `"text" frame: field "content" is an object, want a string`},
		{name: "id not a string", in: `{"channel":"agent","type":"text","taskId":true}`, wantErr: `field "taskId" is a boolean, want a string or number`},
		{name: "questions of numbers", in: `{"channel":"agent","type":"question","questions":[1]}`, wantErr: `field "questions" is an array (not of strings), want an array of strings`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeFrame([]byte(tt.in))
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.JSONEq(t, tt.in, string(got.Raw))
			got.Raw = nil
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestDecodeFrameNotAFrame(t *testing.T) {
	_, err := DecodeFrame([]byte(`{"type":"x"}`))
	require.ErrorIs(t, err, ErrNotAFrame)
	_, err = DecodeFrame([]byte(`{"channel":"agent","type":"text","content":1}`))
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrNotAFrame, "a bad field of a real frame is not 'not a frame'")
}

func TestIsPermissionRequest(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{`{"channel":"agent","type":"permission","requestId":"r"}`, true},
		{`{"channel":"agent","type":"permission_request","requestId":"r"}`, true},
		{`{"channel":"agent","type":"approval_request","requestId":"r"}`, true},
		{`{"channel":"agent","type":"tool_invocation","requestId":"r"}`, true},
		{`{"channel":"agent","type":"permission"}`, false},
		{`{"channel":"agent","type":"text","requestId":"r"}`, false},
		{`{"channel":"agent","type":"result","requestId":"r"}`, false},
		{`{"channel":"files","type":"permission","requestId":"r"}`, false},
	}
	for _, tt := range tests {
		f, err := DecodeFrame([]byte(tt.in))
		require.NoError(t, err)
		assert.Equal(t, tt.want, f.IsPermissionRequest(), tt.in)
	}
}

func TestResultText(t *testing.T) {
	assert.Equal(t, "plain", ResultText(json.RawMessage(`"plain"`)))
	assert.Equal(t, `{"a":1,"b":[true]}`, ResultText(json.RawMessage(`{ "a": 1, "b": [ true ] }`)))
	assert.Equal(t, "42", ResultText(json.RawMessage(`42`)))
	assert.Equal(t, "", ResultText(nil))
	assert.Equal(t, "", ResultText(json.RawMessage(`null`)))
}

func TestClientMessages(t *testing.T) {
	tests := []struct {
		msg  ClientMessage
		want string
	}{
		{PromptMessage("do it", "t1"), `{"channel":"agent","type":"prompt","prompt":"do it","taskId":"t1"}`},
		{PromptMessage("", "t1"), `{"channel":"agent","type":"prompt","prompt":"","taskId":"t1"}`},
		{SettingsMessage("", "m1"), `{"channel":"agent","type":"settings","model":"m1"}`},
		{SettingsMessage("p1", ""), `{"channel":"agent","type":"settings","provider":"p1"}`},
		{AbortMessage("t1"), `{"channel":"agent","type":"abort","taskId":"t1"}`},
		{ToolResponseMessage("c1", ""), `{"channel":"agent","type":"tool_response","toolCallId":"c1","result":""}`},
		{ApproveMessage("r1"), `{"channel":"agent","type":"approve","requestId":"r1"}`},
		{RejectMessage("r1"), `{"channel":"agent","type":"reject","requestId":"r1"}`},
	}
	for _, tt := range tests {
		b, err := tt.msg.Encode()
		require.NoError(t, err)
		assert.JSONEq(t, tt.want, string(b))
	}
	_, err := ClientMessage{}.Encode()
	require.Error(t, err)
}

// FuzzDecodeFrame checks that no input panics, that errors and frames are
// exclusive, and that a decoded agent frame always has channel and type.
func FuzzDecodeFrame(f *testing.F) {
	f.Add([]byte(`{"channel":"agent","type":"text","content":"x"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, err := DecodeFrame(data)
		if err != nil {
			if fr.Channel != "" || fr.Type != "" {
				t.Fatalf("error %v with a non-empty frame %+v", err, fr)
			}
			return
		}
		if fr.Channel == "" || fr.Type == "" {
			t.Fatalf("frame without channel or type: %+v", fr)
		}
		if !json.Valid(fr.Raw) {
			t.Fatalf("Raw is not valid JSON: %q", fr.Raw)
		}
		if fr.Channel == ChannelAgent {
			// Whatever was decoded must translate without panicking.
			st := newTurnState("t").translate(fr)
			for _, ev := range st.Events {
				if _, err := eventJSON(ev); err != nil {
					t.Fatalf("event %T does not encode: %v", ev, err)
				}
			}
		}
	})
}
