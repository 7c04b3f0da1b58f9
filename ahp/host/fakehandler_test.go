package host

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// fakeHandler is a scripted agent behind the host. Every session is ready
// at once. A turn on any chat streams "Hello, world", then either asks to
// run a tool that needs confirmation (the tool call is "tc-<turn id>") or,
// when its message starts with "ask", opens an input request
// ("in-<turn id>") with one required text question; once answered it
// streams "!" and completes. It records every call.
type fakeHandler struct {
	t  testing.TB
	h  *Host
	wg sync.WaitGroup

	mu sync.Mutex
	// changed is closed (and replaced) whenever something is recorded.
	changed       chan struct{}
	actions       []recordedAction
	created       []string
	disposed      []string
	chatsCreated  []string
	chatsDisposed []string
	confirm       map[string]chan bool   // toolCallId → approved
	inputs        map[string]chan string // input request id → response kind
	cancels       map[string]context.CancelFunc
	completions   []wire.CompletionItem
	// runTurns: turns started by clients are played (the default).
	runTurns bool
	// failCreate: sessions fail to start.
	failCreate bool
	// holdReady, when set, delays session/ready until it is closed.
	holdReady chan struct{}
	// afterConfirm, when set, holds a turn after its tool call was
	// answered until it is closed.
	afterConfirm chan struct{}
	// restored are the sessions handed over by RestoreSession.
	restored []RestoredSession
}

type recordedAction struct {
	channel string
	typ     string
	origin  wire.ActionOrigin
	action  wire.StateAction
}

func newFakeHandler(t testing.TB, h *Host) *fakeHandler {
	return &fakeHandler{t: t, h: h, changed: make(chan struct{}), confirm: map[string]chan bool{},
		inputs: map[string]chan string{}, cancels: map[string]context.CancelFunc{}, runTurns: true}
}

// wait waits for the turns still playing (the host's Close cancels them).
func (b *fakeHandler) wait() { b.wg.Wait() }

// noteLocked wakes waitFor; called with b.mu held.
func (b *fakeHandler) noteLocked() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// waitFor waits until cond, called with b.mu held, holds.
func (b *fakeHandler) waitFor(t testing.TB, what string, cond func(b *fakeHandler) bool) {
	t.Helper()
	ctx, cancel := waitCtx(t)
	defer cancel()
	for {
		b.mu.Lock()
		ok, changed := cond(b), b.changed
		b.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("the handler never saw %s", what)
		}
	}
}

// waitAction waits for a recorded client action matching pred.
func (b *fakeHandler) waitAction(t testing.TB, what string, pred func(recordedAction) bool) recordedAction {
	t.Helper()
	var got recordedAction
	b.waitFor(t, what, func(b *fakeHandler) bool {
		for _, r := range b.actions {
			if pred(r) {
				got = r
				return true
			}
		}
		return false
	})
	return got
}

func (b *fakeHandler) set(f func(b *fakeHandler)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f(b)
}

func (b *fakeHandler) CreateSession(ctx context.Context, session, defaultChat string, p wire.CreateSessionParams) {
	b.mu.Lock()
	b.created = append(b.created, session)
	fail, hold := b.failCreate, b.holdReady
	b.noteLocked()
	b.mu.Unlock()
	b.h.Progress(session, "the fake agent has started")
	if hold != nil {
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			select {
			case <-hold:
				b.dispatch(ctx, session, &wire.SessionReadyAction{})
			case <-ctx.Done():
			}
		}()
		return
	}
	if fail {
		b.dispatch(ctx, session, &wire.SessionCreationFailedAction{Error: wire.ErrorInfo{ErrorType: "fake", Message: "the fake agent refused"}})
		return
	}
	b.dispatch(ctx, session, &wire.SessionReadyAction{})
}

func (b *fakeHandler) DisposeSession(ctx context.Context, session string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.disposed = append(b.disposed, session)
	b.noteLocked()
}

func (b *fakeHandler) CreateChat(ctx context.Context, session, chat string, p wire.CreateChatParams) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.chatsCreated = append(b.chatsCreated, chat)
	b.noteLocked()
}

func (b *fakeHandler) DisposeChat(ctx context.Context, session, chat string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.chatsDisposed = append(b.chatsDisposed, chat)
	b.noteLocked()
}

func (b *fakeHandler) ClientAction(ctx context.Context, channel string, a wire.StateAction, origin wire.ActionOrigin) {
	b.mu.Lock()
	b.actions = append(b.actions, recordedAction{channel: channel, typ: a.Type(), origin: origin, action: a})
	b.noteLocked()
	run := b.runTurns
	b.mu.Unlock()
	switch x := a.Value.(type) {
	case *wire.ChatTurnStartedAction:
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
			b.runTurn(tctx, channel, x.TurnID, x.Message.Text)
		}()
	case *wire.ChatTurnCancelledAction:
		b.mu.Lock()
		if c := b.cancels[x.TurnID]; c != nil {
			c()
		}
		b.mu.Unlock()
	case *wire.ChatToolCallApprovedAction:
		b.answer(x.ToolCallID, true)
	case *wire.ChatToolCallDeniedAction:
		b.answer(x.ToolCallID, false)
	case *wire.ChatInputCompletedAction:
		b.mu.Lock()
		ch := b.inputs[x.RequestID]
		b.mu.Unlock()
		if ch != nil {
			select {
			case ch <- string(x.Response):
			default:
			}
		}
	}
}

func (b *fakeHandler) answer(toolCallID string, approved bool) {
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

// dispatch submits a server action unless ctx has ended; a refusal is a
// bug in the script or the host, and is logged.
func (b *fakeHandler) dispatch(ctx context.Context, channel string, v any) bool {
	if ctx.Err() != nil {
		return false
	}
	if _, err := b.h.Dispatch(channel, wire.Action(v)); err != nil {
		if ctx.Err() == nil && b.h.ctx.Err() == nil && b.h.lookup(channel) != nil {
			b.t.Errorf("fake handler: dispatching %T on %s: %v", v, channel, err)
		}
		return false
	}
	return true
}

// runTurn is the scripted agent turn.
func (b *fakeHandler) runTurn(ctx context.Context, chat, turnID, text string) {
	d := func(v any) bool { return b.dispatch(ctx, chat, v) }
	ok := d(&wire.ChatResponsePartAction{TurnID: turnID, Part: wire.NewResponsePart(&wire.MarkdownResponsePart{ID: "p1"})}) &&
		d(&wire.ChatDeltaAction{TurnID: turnID, PartID: "p1", Content: "Hello"}) &&
		d(&wire.ChatDeltaAction{TurnID: turnID, PartID: "p1", Content: ", world"})
	if !ok {
		return
	}
	if strings.HasPrefix(text, "ask") {
		b.askInput(ctx, chat, turnID)
	} else {
		b.runTool(ctx, chat, turnID)
	}
	_ = d(&wire.ChatDeltaAction{TurnID: turnID, PartID: "p1", Content: "!"}) &&
		d(&wire.ChatTurnCompleteAction{TurnID: turnID})
}

// runTool runs a tool call that needs confirmation.
func (b *fakeHandler) runTool(ctx context.Context, chat, turnID string) {
	d := func(v any) bool { return b.dispatch(ctx, chat, v) }
	toolCallID := "tc-" + turnID
	confirm := make(chan bool, 1)
	b.mu.Lock()
	b.confirm[toolCallID] = confirm
	b.mu.Unlock()
	if !d(&wire.ChatToolCallStartAction{TurnID: turnID, ToolCallID: toolCallID, ToolName: "write", DisplayName: "Write file"}) ||
		!d(&wire.ChatToolCallReadyAction{TurnID: turnID, ToolCallID: toolCallID, InvocationMessage: wire.PlainText("Write hello.txt")}) {
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
		d(&wire.ChatToolCallCompleteAction{TurnID: turnID, ToolCallID: toolCallID,
			Result: wire.ToolCallResult{Success: true, PastTenseMessage: wire.PlainText("Wrote hello.txt")}})
	}
}

// askInput opens an input request and waits for its answer.
func (b *fakeHandler) askInput(ctx context.Context, chat, turnID string) {
	id := "in-" + turnID
	answered := make(chan string, 1)
	b.mu.Lock()
	b.inputs[id] = answered
	b.mu.Unlock()
	req := wire.ChatInputRequest{ID: id, Message: wire.Ptr("Which file?"), Questions: []wire.ChatInputQuestion{
		wire.NewChatInputQuestion(&wire.ChatInputTextQuestion{ID: "q1", Message: "File name", Required: wire.Ptr(true)}),
	}}
	if !b.dispatch(ctx, chat, &wire.ChatInputRequestedAction{Request: req}) {
		return
	}
	select {
	case <-ctx.Done():
	case <-answered:
	}
}

func (b *fakeHandler) Completions(ctx context.Context, p wire.CompletionsParams) (wire.CompletionsResult, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return wire.CompletionsResult{Items: b.completions}, nil
}

func (b *fakeHandler) ResourceRead(ctx context.Context, p wire.ResourceReadParams) (wire.ResourceReadResult, error) {
	if p.URI == "ahp-test:/hello.txt" {
		return wire.ResourceReadResult{Data: "hello", Encoding: wire.ContentEncoding("utf-8")}, nil
	}
	return wire.ResourceReadResult{}, Errorf(CodeNotFound, "%s not found", p.URI)
}

// recorded returns the client actions handed over so far.
func (b *fakeHandler) recorded() []recordedAction {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]recordedAction(nil), b.actions...)
}
