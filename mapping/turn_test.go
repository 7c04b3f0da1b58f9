package mapping

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// The scenarios' turn starts at turnStart and every clock reading is
// turnStart+turnDuration, so each end action carries that duration.
const (
	turnStart    = 1_700_000_000_000
	turnDuration = 1500
)

func turnClock() int64 { return turnStart + turnDuration }

// newTestTurn is the Turn t1 of the scenarios.
func newTestTurn() *Turn { return NewTurn("t1", turnStart, seqIDs(), turnClock) }

// seqIDs is a deterministic id generator: id1, id2, …
func seqIDs() func() string {
	n := 0
	return func() string {
		n++
		return fmt.Sprintf("id%d", n)
	}
}

// step is one line of a scenario in testdata/turn/*.in.json. Exactly one
// field is set.
type step struct {
	Text       *string                 `json:"text"`
	Thought    *string                 `json:"thought"`
	Block      *backend.ContentBlock   `json:"block"`
	Tool       *toolStep               `json:"tool"`
	Permission *permissionStep         `json:"permission"`
	Auto       *autoStep               `json:"auto"`
	Confirmed  *confirmedStep          `json:"confirmed"`
	Question   []string                `json:"question"`
	Plan       []backend.PlanEntry     `json:"plan"`
	Usage      *backend.Usage          `json:"usage"`
	Title      *string                 `json:"title"`
	Config     []backend.ConfigOption  `json:"config"`
	Commands   []backend.Command       `json:"commands"`
	Custom     *backend.Custom         `json:"custom"`
	Terminal   *backend.TerminalOutput `json:"terminal"`
	Exited     *backend.TerminalExited `json:"exited"`
	Disconnect *string                 `json:"disconnected"`
	End        *endStep                `json:"end"`
}

type toolStep struct {
	backend.ToolCall
	// Mode is "replace" or "append" (ContentMode).
	Mode string `json:"mode"`
}

func (s toolStep) event() backend.ToolCall {
	tc := s.ToolCall
	switch s.Mode {
	case "replace":
		tc.ContentMode = backend.ContentReplace
	case "append":
		tc.ContentMode = backend.ContentAppend
	}
	return tc
}

type permissionStep struct {
	ToolCall toolStep                   `json:"toolCall"`
	Options  []backend.PermissionOption `json:"options"`
}

type autoStep struct {
	permissionStep
	Approve bool `json:"approve"`
}

type confirmedStep struct {
	ToolCallID string `json:"toolCallId"`
	Approved   bool   `json:"approved"`
}

type endStep struct {
	backend.TurnResult
	Error string `json:"error"`
}

// golden is what a scenario produces.
type golden struct {
	Actions   []json.RawMessage   `json:"actions"`
	Resources map[string]Resource `json:"resources,omitempty"`
	Meta      map[string]any      `json:"meta,omitempty"`
	Questions []string            `json:"pendingQuestions,omitempty"`
}

// runScenario feeds a scenario to a fresh Turn and returns its actions.
func runScenario(t *testing.T, steps []step) (*Turn, []wire.StateAction) {
	t.Helper()
	turn, acts, _ := runTimeline(t, steps)
	return turn, acts
}

// runTimeline is runScenario that also returns the timeline of everything
// a session would see: the Turn's actions interleaved with the client's
// toolCallConfirmed actions of `confirmed` steps.
func runTimeline(t *testing.T, steps []step) (turn *Turn, acts, timeline []wire.StateAction) {
	t.Helper()
	turn = newTestTurn()
	for i, s := range steps {
		got, client, ok := applyStep(turn, s)
		if !ok {
			t.Fatalf("step %d sets no field", i)
		}
		if client != nil {
			timeline = append(timeline, *client)
		}
		acts = append(acts, got...)
		timeline = append(timeline, got...)
	}
	return turn, acts, timeline
}

// applyStep feeds one scenario step to the Turn. client is the action a
// client dispatched in the step (a confirmation), ok is false for a step
// that sets no field.
func applyStep(turn *Turn, s step) (got []wire.StateAction, client *wire.StateAction, ok bool) {
	switch {
	case s.Text != nil:
		got = turn.Apply(backend.TextChunk{Text: *s.Text})
	case s.Thought != nil:
		got = turn.Apply(backend.ThoughtChunk{Text: *s.Thought})
	case s.Block != nil:
		got = turn.Apply(*s.Block)
	case s.Tool != nil:
		got = turn.Apply(s.Tool.event())
	case s.Permission != nil:
		got = turn.Apply(backend.PermissionRequest{ToolCall: s.Permission.ToolCall.event(), Options: s.Permission.Options})
	case s.Auto != nil:
		got = turn.AutoPermission(backend.PermissionRequest{ToolCall: s.Auto.ToolCall.event(), Options: s.Auto.Options}, s.Auto.Approve)
	case s.Confirmed != nil:
		turn.ToolConfirmed(s.Confirmed.ToolCallID, s.Confirmed.Approved)
		c := clientConfirmation(s.Confirmed.ToolCallID, s.Confirmed.Approved)
		client = &c
	case s.Question != nil:
		got = turn.Apply(backend.Question{Questions: s.Question})
	case s.Plan != nil:
		got = turn.Apply(backend.Plan{Entries: s.Plan})
	case s.Usage != nil:
		got = turn.Apply(backend.UsageUpdate{Usage: *s.Usage})
	case s.Title != nil:
		got = turn.Apply(backend.TitleChanged{Title: *s.Title})
	case s.Config != nil:
		got = turn.Apply(backend.ConfigChanged{Options: s.Config})
	case s.Commands != nil:
		got = turn.Apply(backend.CommandsChanged{Commands: s.Commands})
	case s.Custom != nil:
		got = turn.Apply(*s.Custom)
	case s.Terminal != nil:
		got = turn.Apply(*s.Terminal)
	case s.Exited != nil:
		got = turn.Apply(*s.Exited)
	case s.Disconnect != nil:
		got = turn.Apply(backend.Disconnected{Err: errors.New(*s.Disconnect)})
	case s.End != nil:
		var err error
		if s.End.Error != "" {
			err = errors.New(s.End.Error)
		}
		got = turn.End(s.End.TurnResult, err)
	default:
		return nil, nil, false
	}
	return got, client, true
}

// clientConfirmation is the chat/toolCallConfirmed a client dispatches.
func clientConfirmation(toolCallID string, approved bool) wire.StateAction {
	if approved {
		return wire.Action(&wire.ChatToolCallApprovedAction{
			TurnID: "t1", ToolCallID: toolCallID, Approved: true, Confirmed: wire.ToolCallConfirmationReasonUserAction,
		})
	}
	return wire.Action(&wire.ChatToolCallDeniedAction{
		TurnID: "t1", ToolCallID: toolCallID, Reason: wire.ToolCallCancellationReasonDenied,
	})
}

func scenarioFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "turn", "*.in.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no scenarios in testdata/turn")
	return files
}

func loadSteps(t *testing.T, file string) []step {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	var steps []step
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&steps), "decoding %s", file)
	return steps
}

// TestTurnGolden runs every scenario in testdata/turn and compares the
// actions (and published resources, meta and pending questions) with the
// golden file next to it. Run with -update to rewrite the goldens.
func TestTurnGolden(t *testing.T) {
	for _, file := range scenarioFiles(t) {
		name := strings.TrimSuffix(filepath.Base(file), ".in.json")
		t.Run(name, func(t *testing.T) {
			turn, acts := runScenario(t, loadSteps(t, file))
			g := golden{Resources: turn.Resources(), Meta: turn.Meta()}
			if len(g.Resources) == 0 {
				g.Resources = nil
			}
			for _, pq := range turn.PendingQuestions() {
				g.Questions = append(g.Questions, pq.Request.ID)
			}
			for _, a := range acts {
				b, err := json.Marshal(a)
				require.NoError(t, err)
				g.Actions = append(g.Actions, b)
			}
			got, err := json.MarshalIndent(g, "", "  ")
			require.NoError(t, err)
			got = append(got, '\n')
			goldenFile := filepath.Join("testdata", "turn", name+".golden.json")
			if *update {
				require.NoError(t, os.WriteFile(goldenFile, got, 0o644))
				return
			}
			want, err := os.ReadFile(goldenFile)
			require.NoError(t, err, "missing golden file; run go test ./mapping -update and review it")
			require.JSONEq(t, string(want), string(got))

			// Every action must survive a decode/encode round trip through
			// the wire types unchanged.
			for i, raw := range g.Actions {
				var back wire.StateAction
				require.NoError(t, json.Unmarshal(raw, &back), "action %d", i)
				again, err := json.Marshal(back)
				require.NoError(t, err)
				require.JSONEq(t, string(raw), string(again), "action %d", i)
			}
		})
	}
}

// actionTypes lists the `type` of each action, for the targeted tests.
func actionTypes(t *testing.T, acts []wire.StateAction) []string {
	t.Helper()
	var out []string
	for _, a := range acts {
		b, err := json.Marshal(a)
		require.NoError(t, err)
		var head struct {
			Type string `json:"type"`
		}
		require.NoError(t, json.Unmarshal(b, &head))
		out = append(out, head.Type)
	}
	return out
}

func TestEveryScenarioHasGolden(t *testing.T) {
	// Guard against a scenario without golden (or a stale golden without
	// a scenario), which would silently test nothing.
	ins := scenarioFiles(t)
	goldens, err := filepath.Glob(filepath.Join("testdata", "turn", "*.golden.json"))
	require.NoError(t, err)
	var a, b []string
	for _, f := range ins {
		a = append(a, strings.TrimSuffix(filepath.Base(f), ".in.json"))
	}
	for _, f := range goldens {
		b = append(b, strings.TrimSuffix(filepath.Base(f), ".golden.json"))
	}
	sort.Strings(a)
	sort.Strings(b)
	if !*update {
		require.Equal(t, a, b)
	}
}
