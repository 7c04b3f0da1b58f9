package agentchan

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/rs/zerolog"

	"github.com/ahp-bridge/ahp-bridge/backend"
)

// maxAborted bounds how many aborted task ids are remembered to drop their
// late frames.
const maxAborted = 64

// session is the conversation on one agent-channel socket: it turns
// Prompt, Cancel and SetConfig into frames, and the frames of the running
// task into backend events and the turn's outcome. The socket (socket.go)
// owns the connection and its goroutines; the session owns no goroutine
// and is called by the socket's run goroutine (handle, lost, greeting) and
// by the bridge.
//
// Lock discipline: mu guards every field below it, and is held only to
// read or write them: never across a call to the socket or the sink.
type session struct {
	p    *Provider
	log  zerolog.Logger
	sink backend.Sink
	sock *socket

	mu        sync.Mutex
	turn      *turn
	aborted   map[string]struct{}
	abortList []string
	provider  string // settings to restore after a reconnection
	model     string
	closed    bool
	turnSeq   int
}

// turn is a running Prompt.
type turn struct {
	state *turnState
	done  chan turnOutcome // buffered; receives exactly one outcome
	once  sync.Once
	// delivering counts frames of this turn whose events are being given
	// to the sink, so Prompt returns only after the last of them. Add is
	// called under the session's mu while this is the running turn, which
	// is before the turn can end, and so before Prompt waits.
	delivering sync.WaitGroup
}

type turnOutcome struct {
	result backend.TurnResult
	err    error
}

func newTurn(taskID string) *turn {
	return &turn{state: newTurnState(taskID), done: make(chan turnOutcome, 1)}
}

func (t *turn) finish(o turnOutcome) { t.once.Do(func() { t.done <- o }) }

func newSession(p *Provider, opts backend.SessionOptions, sink backend.Sink) *session {
	s := &session{
		p:       p,
		log:     p.log.With().Str("session", opts.SessionID).Logger(),
		sink:    sink,
		aborted: map[string]struct{}{},
		model:   opts.Model,
	}
	s.sock = newSocket(p.url, p.cfg, s.log, socketEvents{greeting: s.greeting, frame: s.handle, lost: s.lost})
	return s
}

// start connects the session's socket.
func (s *session) start(ctx context.Context) error { return s.sock.open(ctx) }

// greeting is the settings frame that restores the model and provider on a
// new connection, if any were chosen.
func (s *session) greeting() []ClientMessage {
	s.mu.Lock()
	provider, model := s.provider, s.model
	s.mu.Unlock()
	if provider == "" && model == "" {
		return nil
	}
	return []ClientMessage{SettingsMessage(provider, model)}
}

// lost handles a dropped connection: a running turn ends with an error;
// otherwise the sink hears that the backend is disconnected.
func (s *session) lost(err error) {
	s.mu.Lock()
	t := s.turn
	s.turn = nil
	closing := s.closed
	s.mu.Unlock()
	if closing {
		return
	}
	s.log.Warn().Err(err).Msg("agent-channel connection lost; reconnecting")
	if t != nil {
		t.finish(turnOutcome{err: fmt.Errorf("the connection to the agent-channel backend was lost during the turn: %w", err)})
		return
	}
	s.sink.Event(backend.Disconnected{Err: fmt.Errorf("the connection to the agent-channel backend was lost (reconnecting): %w", err)})
}

// handle decodes one message and delivers what it means for the turn.
func (s *session) handle(data []byte) {
	f, err := DecodeFrame(data)
	if err != nil {
		s.log.Warn().Err(err).Int("bytes", len(data)).Msg("agent-channel: ignoring undecodable message")
		return
	}
	if f.Channel != ChannelAgent {
		s.log.Debug().Str("channel", f.Channel).Str("type", f.Type).Msg("agent-channel: ignoring frame of another channel")
		return
	}
	s.mu.Lock()
	t := s.turn
	if f.TaskID != "" && (t == nil || f.TaskID != t.state.taskID) {
		_, late := s.aborted[f.TaskID]
		s.mu.Unlock()
		if late {
			s.log.Debug().Str("task", f.TaskID).Str("type", f.Type).Msg("agent-channel: dropping late frame of an aborted task")
		} else {
			s.log.Debug().Str("task", f.TaskID).Str("type", f.Type).Msg("agent-channel: dropping frame of a task that is not running")
		}
		return
	}
	if t == nil {
		s.mu.Unlock()
		if f.Type == TypeError {
			s.log.Warn().Str("error", f.Message).Msg("agent-channel: the backend reported an error outside a turn")
			return
		}
		s.log.Debug().Str("type", f.Type).Msg("agent-channel: dropping frame received outside a turn")
		return
	}
	st := t.state.translate(f)
	if st.End != nil {
		s.turn = nil
	}
	t.delivering.Add(1)
	defer t.delivering.Done()
	s.mu.Unlock()
	if len(st.Events) == 0 && st.End == nil {
		s.log.Debug().Str("type", f.Type).Msg("agent-channel: ignoring unknown frame type")
	}
	for _, ev := range st.Events {
		switch e := ev.(type) {
		case backend.PermissionRequest:
			e.Respond = s.permissionResponder(t, st.RequestID, e.ToolCall.ID)
			ev = e
		case backend.Question:
			e.Respond = s.questionResponder(t, st.AnswerTo)
			ev = e
		}
		s.sink.Event(ev)
	}
	if st.End != nil {
		if st.End.Failed {
			t.finish(turnOutcome{err: fmt.Errorf("the agent-channel backend reported an error: %s", st.End.Err)})
		} else {
			t.finish(turnOutcome{result: backend.TurnResult{StopReason: backend.StopEndTurn, Summary: st.End.Summary}})
		}
	}
}

// permissionResponder answers a permission request once, while its turn
// runs.
func (s *session) permissionResponder(t *turn, requestID, callID string) func(backend.PermissionOutcome) {
	var once sync.Once
	return func(o backend.PermissionOutcome) {
		once.Do(func() {
			approve := !o.Cancelled && o.OptionID == OptionApprove
			s.mu.Lock()
			active := s.turn == t
			if active && !approve {
				t.state.rejected(callID)
			}
			s.mu.Unlock()
			if !active {
				s.log.Debug().Str("request", requestID).Msg("agent-channel: permission answered after its turn ended; not sent")
				return
			}
			msg := RejectMessage(requestID)
			if approve {
				msg = ApproveMessage(requestID)
			}
			if err := s.send(msg); err != nil {
				s.log.Warn().Err(err).Str("request", requestID).Msg("agent-channel: could not answer the permission request")
			}
		})
	}
}

// questionResponder answers a question once, while its turn runs: with a
// tool_response to the tool call that asked, or with a follow-up prompt.
func (s *session) questionResponder(t *turn, toolCallID string) func([]string, bool) {
	var once sync.Once
	return func(answers []string, declined bool) {
		once.Do(func() {
			s.mu.Lock()
			active := s.turn == t
			s.mu.Unlock()
			if !active {
				s.log.Debug().Msg("agent-channel: question answered after its turn ended; not sent")
				return
			}
			text := strings.Join(answers, "\n")
			if declined {
				text = DeclinedAnswer
			}
			msg := PromptMessage(text, t.state.taskID)
			if toolCallID != "" {
				msg = ToolResponseMessage(toolCallID, text)
			}
			if err := s.send(msg); err != nil {
				s.log.Warn().Err(err).Msg("agent-channel: could not answer the question")
			}
		})
	}
}

// send writes msg on the socket's current connection.
func (s *session) send(msg ClientMessage) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return ErrSessionClosed
	}
	return s.sock.send(msg)
}

// Prompt sends the prompt as a task whose id is the turn id and waits for
// the task's `result` (StopEndTurn), `error` (an error), a Cancel
// (StopCancelled) or the loss of the connection (an error).
func (s *session) Prompt(ctx context.Context, p backend.Prompt) (backend.TurnResult, error) {
	if err := s.sock.waitConnected(ctx); err != nil {
		return backend.TurnResult{}, err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return backend.TurnResult{}, ErrSessionClosed
	}
	if s.turn != nil {
		s.mu.Unlock()
		return backend.TurnResult{}, errors.New("agent-channel session: a turn is already running")
	}
	s.turnSeq++
	id := p.TurnID
	if id == "" {
		id = fmt.Sprintf("turn-%d", s.turnSeq)
	}
	t := newTurn(id)
	s.turn = t
	s.mu.Unlock()

	if err := s.send(PromptMessage(PromptText(p), id)); err != nil {
		s.mu.Lock()
		if s.turn == t {
			s.turn = nil
		}
		s.mu.Unlock()
		return backend.TurnResult{}, fmt.Errorf("send the prompt to the agent-channel backend: %w", err)
	}

	var o turnOutcome
	select {
	case o = <-t.done:
	case <-ctx.Done():
		if err := s.abort(t); err != nil {
			s.log.Warn().Err(err).Msg("agent-channel: could not abort the task")
		}
		o = <-t.done
		if o.result.StopReason == backend.StopCancelled {
			o.err = fmt.Errorf("agent-channel turn stopped: %w", ctx.Err())
		}
	}
	// The outcome can overtake a frame of the turn whose events are being
	// delivered (a Cancel, a lost connection); none may follow Prompt.
	t.delivering.Wait()
	return o.result, o.err
}

// Cancel aborts the running task and ends the turn at once as cancelled;
// frames the server still sends for the task are dropped.
func (s *session) Cancel(ctx context.Context) error {
	s.mu.Lock()
	t := s.turn
	s.mu.Unlock()
	if t == nil {
		return nil
	}
	if err := s.abort(t); err != nil && !errors.Is(err, ErrNotConnected) {
		s.log.Warn().Err(err).Msg("agent-channel: could not send abort; the turn is ended locally")
	}
	return nil
}

// abort ends turn t as cancelled and tells the server to stop the task.
func (s *session) abort(t *turn) error {
	s.mu.Lock()
	if s.turn != t {
		s.mu.Unlock()
		return nil
	}
	s.turn = nil
	id := t.state.taskID
	s.aborted[id] = struct{}{}
	s.abortList = append(s.abortList, id)
	if len(s.abortList) > maxAborted {
		delete(s.aborted, s.abortList[0])
		s.abortList = s.abortList[1:]
	}
	s.mu.Unlock()
	t.finish(turnOutcome{result: backend.TurnResult{StopReason: backend.StopCancelled}})
	return s.send(AbortMessage(id))
}

// SetConfig sends `settings`: key "model" or "provider".
func (s *session) SetConfig(ctx context.Context, key, value string) error {
	if value == "" {
		return fmt.Errorf("agent-channel setting %q: empty value", key)
	}
	var msg ClientMessage
	s.mu.Lock()
	switch key {
	case "model":
		s.model = value
		msg = SettingsMessage("", value)
	case "provider":
		s.provider = value
		msg = SettingsMessage(value, "")
	default:
		s.mu.Unlock()
		return fmt.Errorf("agent-channel backend has no setting %q (only model and provider)", key)
	}
	s.mu.Unlock()
	if err := s.send(msg); err != nil {
		return fmt.Errorf("change agent-channel setting %q: %w", key, err)
	}
	return nil
}

// Close ends a running turn with an error, closes the socket and stops
// reconnection. It waits for the socket's goroutines, or for ctx.
func (s *session) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return s.sock.close(ctx)
	}
	s.closed = true
	t := s.turn
	s.turn = nil
	s.mu.Unlock()
	s.p.forget(s)
	if t != nil {
		t.finish(turnOutcome{err: ErrSessionClosed})
	}
	return s.sock.close(ctx)
}
