package codec

import (
	"bytes"
	"encoding/json"
	"testing"

	w3 "github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
)

// FuzzV030 feeds arbitrary JSON to every translation of the 0.3.0 codec,
// seeded with the golden inputs. None may panic; each must be a function
// of its input (the host translates a broadcast once and again on replay);
// and whatever Envelope lets through must be an action 0.3.0 knows.
func FuzzV030(f *testing.F) {
	for _, kind := range []string{"envelope", "action", "notification", "request", "result"} {
		for _, g := range goldenFiles(f, kind) {
			var in struct {
				Channel string          `json:"channel"`
				Method  string          `json:"method"`
				Action  json.RawMessage `json:"action"`
				Params  json.RawMessage `json:"params"`
				Result  json.RawMessage `json:"result"`
			}
			if json.Unmarshal(g.Input, &in) != nil {
				continue
			}
			body := in.Action
			if body == nil {
				body = in.Params
			}
			if body == nil {
				body = in.Result
			}
			f.Add(in.Channel+in.Method, []byte(body))
		}
	}
	c := testCodec()
	f.Fuzz(func(t *testing.T, name string, body []byte) {
		for _, ch := range []string{name, testSession, testChat, testSideChat} {
			a := c.Envelope(Envelope{Channel: ch, Action: body, ServerSeq: 1})
			b := c.Envelope(Envelope{Channel: ch, Action: body, ServerSeq: 1})
			if len(a) != len(b) {
				t.Fatalf("Envelope(%s) is not a function of its input", body)
			}
			for i := range a {
				if !bytes.Equal(a[i].Action, b[i].Action) || a[i].Channel != b[i].Channel {
					t.Fatalf("Envelope(%s) is not a function of its input", body)
				}
				var act w3.StateAction
				if err := json.Unmarshal(a[i].Action, &act); err != nil {
					t.Fatalf("Envelope(%s) gave %s, which 0.3.0 cannot decode: %v", body, a[i].Action, err)
				}
				if _, raw := act.Value.(json.RawMessage); raw {
					t.Fatalf("Envelope(%s) gave %s, unknown to 0.3.0", body, a[i].Action)
				}
			}
			c1, a1, e1 := c.Action(ch, body)
			c2, a2, e2 := c.Action(ch, body)
			if c1 != c2 || !bytes.Equal(a1, a2) || (e1 == nil) != (e2 == nil) {
				t.Fatalf("Action(%s) is not a function of its input", body)
			}
		}
		c.Notification(name, body)
		c.Request(name, body)
		c.Result(name, body)
		c.Result(InternalFetchTurnsPage, body)
		c.Channels(name)
	})
}
