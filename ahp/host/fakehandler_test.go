package host

import (
	"context"
	"sync"

	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
)

// fakeBackend is a scripted agent: every turn streams text, asks to run a
// tool that needs confirmation, then completes. It records every hand-off.
type fakeBackend struct {
	h  *Host
	wg sync.WaitGroup

	mu          sync.Mutex
	actions     []recordedAction
	created     []string
	disposed    []string
	confirm     map[string]chan bool // toolCallId → approved
	cancels     map[string]context.CancelFunc
	completions []wire.CompletionItem
	runTurns    bool
	// afterConfirm, when set, holds a turn after its tool call was
	// answered until it is closed.
	afterConfirm chan struct{}
}

type recordedAction struct {
	channel string
	typ     string
	origin  wire.ActionOrigin
	action  wire.StateAction
}

func newFakeBackend(h *Host) *fakeBackend {
	return &fakeBackend{h: h, confirm: map[string]chan bool{}, cancels: map[string]context.CancelFunc{}, runTurns: true}
}

func (b *fakeBackend) wait() { b.wg.Wait() }

func (b *fakeBackend) CreateSession(ctx context.Context, channel string, p wire.CreateSessionParams) {
	b.mu.Lock()
	b.created = append(b.created, channel)
	b.mu.Unlock()
	_, _ = b.h.Dispatch(channel, wire.Action(&wire.SessionReadyAction{}))
}

func (b *fakeBackend) DisposeSession(ctx context.Context, channel string) {
	b.mu.Lock()
	b.disposed = append(b.disposed, channel)
	b.mu.Unlock()
}

func (b *fakeBackend) ClientAction(ctx context.Context, channel string, a wire.StateAction, origin wire.ActionOrigin) {
	b.mu.Lock()
	b.actions = append(b.actions, recordedAction{channel: channel, typ: a.Type(), origin: origin, action: a})
	run := b.runTurns
	b.mu.Unlock()
	switch x := a.Value.(type) {
	case *wire.SessionTurnStartedAction:
		if !run {
			return
		}
		tctx, cancel := context.WithCancel(ctx)
		b.mu.Lock()
		b.cancels[x.TurnID] = cancel
		b.mu.Unlock()
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			defer cancel()
			b.runTurn(tctx, channel, x.TurnID)
		}()
	case *wire.SessionTurnCancelledAction:
		b.mu.Lock()
		if c := b.cancels[x.TurnID]; c != nil {
			c()
		}
		b.mu.Unlock()
	case *wire.SessionToolCallApprovedAction:
		b.answer(x.ToolCallID, true)
	case *wire.SessionToolCallDeniedAction:
		b.answer(x.ToolCallID, false)
	}
}

func (b *fakeBackend) answer(toolCallID string, approved bool) {
	b.mu.Lock()
	ch := b.confirm[toolCallID]
	b.mu.Unlock()
	if ch != nil {
		select {
		case ch <- approved:
		default:
		}
	}
}

// runTurn is the scripted agent turn.
func (b *fakeBackend) runTurn(ctx context.Context, channel, turnID string) {
	d := func(v any) bool {
		if ctx.Err() != nil {
			return false
		}
		_, err := b.h.Dispatch(channel, wire.Action(v))
		return err == nil
	}
	toolCallID := "tc-" + turnID
	confirm := make(chan bool, 1)
	b.mu.Lock()
	b.confirm[toolCallID] = confirm
	b.mu.Unlock()
	ok := d(&wire.SessionResponsePartAction{TurnID: turnID, Part: wire.NewResponsePart(&wire.MarkdownResponsePart{ID: "p1", Content: ""})}) &&
		d(&wire.SessionDeltaAction{TurnID: turnID, PartID: "p1", Content: "Hello"}) &&
		d(&wire.SessionDeltaAction{TurnID: turnID, PartID: "p1", Content: ", world"}) &&
		d(&wire.SessionToolCallStartAction{TurnID: turnID, ToolCallID: toolCallID, ToolName: "write", DisplayName: "Write file"}) &&
		d(&wire.SessionToolCallReadyAction{TurnID: turnID, ToolCallID: toolCallID, InvocationMessage: wire.PlainText("Write hello.txt")})
	if !ok {
		return
	}
	var approved bool
	select {
	case <-ctx.Done():
		return
	case approved = <-confirm:
	}
	b.mu.Lock()
	gate := b.afterConfirm
	b.mu.Unlock()
	if gate != nil {
		select {
		case <-ctx.Done():
			return
		case <-gate:
		}
	}
	if approved {
		ok = d(&wire.SessionToolCallCompleteAction{TurnID: turnID, ToolCallID: toolCallID,
			Result: wire.ToolCallResult{Success: true, PastTenseMessage: wire.PlainText("Wrote hello.txt")}})
	}
	_ = ok && d(&wire.SessionDeltaAction{TurnID: turnID, PartID: "p1", Content: "!"}) &&
		d(&wire.SessionTurnCompleteAction{TurnID: turnID})
}

func (b *fakeBackend) Completions(ctx context.Context, p wire.CompletionsParams) (wire.CompletionsResult, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return wire.CompletionsResult{Items: b.completions}, nil
}

func (b *fakeBackend) ResourceRead(ctx context.Context, p wire.ResourceReadParams) (wire.ResourceReadResult, error) {
	if p.URI == "file:///hello.txt" {
		return wire.ResourceReadResult{Data: "hello", Encoding: wire.ContentEncoding("utf-8")}, nil
	}
	return wire.ResourceReadResult{}, Errorf(CodeNotFound, "%s not found", p.URI)
}

// recorded returns the hand-offs so far.
func (b *fakeBackend) recorded() []recordedAction {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]recordedAction(nil), b.actions...)
}
