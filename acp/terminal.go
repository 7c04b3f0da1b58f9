package acp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/ahp-bridge/ahp-bridge/backend"
	sdk "github.com/coder/acp-go-sdk"
)

// defaultOutputLimit bounds the output kept for a terminal whose creator
// gave no outputByteLimit, so a chatty command cannot eat the bridge's memory.
const defaultOutputLimit = 4 << 20

// maxOutputLimit bounds what an agent may ask a terminal to keep with
// outputByteLimit: however much it asks for, a chatty command cannot make
// the bridge hold more than this per terminal.
const maxOutputLimit = 16 << 20

// mirroredOutputLimit bounds the output of one terminal reported as
// TerminalOutput events (the AHP terminal channel clients watch, which the
// host keeps in its state): after it, one note says the rest is not shown,
// so a command printing without end cannot grow the clients' state.
const mirroredOutputLimit = 4 << 20

// mirrorTruncatedNote ends a terminal's mirrored output at the limit.
const mirrorTruncatedNote = "\n[ahp-bridge: output beyond 4 MiB is not shown here]\n"

// terminal is a command run for the agent (ACP terminal/create).
type terminal struct {
	id    string
	cmd   *exec.Cmd
	pid   int
	limit int
	out   *os.File

	mu        sync.Mutex
	buf       []byte
	truncated bool
	exitCode  *int
	signal    *string

	readerDone chan struct{}
	exited     chan struct{}
}

// append keeps at most limit bytes of output, dropping from the start at a
// character boundary. Dropping reslices instead of copying: copying the kept
// bytes on every chunk made a command printing past its limit cost
// limit × chunks of copying (gigabytes for 20 MiB through a 16 MiB limit);
// append's own reallocation now copies the kept bytes once per growth, so
// memory stays below about twice the limit.
func (t *terminal) append(b []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > t.limit {
		cut := len(t.buf) - t.limit
		for cut < len(t.buf) && !utf8.RuneStart(t.buf[cut]) {
			cut++
		}
		t.buf = t.buf[cut:]
		t.truncated = true
	}
}

func (t *terminal) status() (*int, *string, bool) {
	select {
	case <-t.exited:
	default:
		return nil, nil, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.exitCode, t.signal, true
}

// commandLine builds the command: a command with arguments runs directly;
// a bare command line with shell syntax runs through /bin/sh.
func commandLine(command string, args []string) *exec.Cmd {
	if len(args) == 0 && strings.ContainsAny(command, " \t|&;<>()$`\"'*?\n") {
		return exec.Command("/bin/sh", "-c", command)
	}
	return exec.Command(command, args...)
}

// createTerminal implements terminal/create.
func (s *session) createTerminal(req sdk.CreateTerminalRequest) (string, error) {
	if req.Command == "" {
		return "", fsError(codeInvalidParams, "terminal command is empty")
	}
	dir := s.cwd
	if req.Cwd != nil && *req.Cwd != "" {
		real, err := s.terminalDir(*req.Cwd)
		if err != nil {
			return "", err
		}
		dir = real
	}
	limit := defaultOutputLimit
	if req.OutputByteLimit != nil {
		if *req.OutputByteLimit < 0 {
			return "", fsError(codeInvalidParams, "outputByteLimit must not be negative")
		}
		limit = min(*req.OutputByteLimit, maxOutputLimit)
	}

	cmd := commandLine(req.Command, req.Args)
	cmd.Dir = dir
	cmd.Env = os.Environ()
	for _, e := range req.Env {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	setProcessGroup(cmd)
	r, w, err := os.Pipe()
	if err != nil {
		return "", fsError(codeInternal, "creating terminal: %v", err)
	}
	cmd.Stdout, cmd.Stderr = w, w

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		closeAll(r, w)
		return "", fsError(codeInvalidParams, "session is closed")
	}
	s.mu.Unlock()
	id := newTerminalID()

	if err := cmd.Start(); err != nil {
		closeAll(r, w)
		return "", fsError(codeInternal, "starting %q: %v", req.Command, err)
	}
	_ = w.Close()
	t := &terminal{
		id: id, cmd: cmd, pid: cmd.Process.Pid, limit: limit, out: r,
		readerDone: make(chan struct{}), exited: make(chan struct{}),
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = killGroup(t.pid)
		_ = cmd.Wait()
		_ = r.Close()
		return "", fsError(codeInvalidParams, "session is closed")
	}
	s.terms[id] = t
	s.mu.Unlock()

	display := strings.TrimSpace(strings.Join(append([]string{req.Command}, req.Args...), " "))
	s.queue.push(queueItem{event: backend.TerminalStarted{TerminalID: id, Command: display, Cwd: dir}})
	go s.readTerminal(t)
	go s.waitTerminal(t)
	s.log.Info().Str("terminal", id).Str("command", display).Msg("terminal started")
	return id, nil
}

// terminalEpoch tells this run of the bridge apart from every other, so
// terminal ids are never reused even across restarts (clients and stored
// state know terminals by a URI made of the id).
var terminalEpoch = sync.OnceValue(func() string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		// crypto/rand does not fail on the systems the bridge runs on;
		// the clock still sets this run apart should it.
		return strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	return hex.EncodeToString(b)
})

// terminalSeq numbers the terminals of this run of the bridge.
var terminalSeq atomic.Uint64

// newTerminalID returns a terminal id unique to the whole bridge: one agent
// process serves many sessions, and every terminal of every session and
// provider ends up in the same namespace of AHP terminal channels, so ids
// made per session (they once were, from a prefix of the session id that
// all sessions shared) make one session's output land in another's.
func newTerminalID() string {
	return fmt.Sprintf("term-%s-%d", terminalEpoch(), terminalSeq.Add(1))
}

// readTerminal captures output and reports it as TerminalOutput events,
// never splitting a UTF-8 character between two events.
func (s *session) readTerminal(t *terminal) {
	defer close(t.readerDone)
	buf := make([]byte, 32<<10)
	var carry []byte
	mirrored, noted := 0, false
	mirror := func(data []byte) {
		if room := mirroredOutputLimit - mirrored; len(data) > room {
			// Show what fits, cut at a character boundary, and say once
			// that the rest is not shown.
			for room > 0 && !utf8.RuneStart(data[room]) {
				room--
			}
			if room > 0 {
				s.queue.push(queueItem{event: backend.TerminalOutput{TerminalID: t.id, Data: string(data[:room])}})
			}
			mirrored = mirroredOutputLimit
			if !noted {
				noted = true
				s.queue.push(queueItem{event: backend.TerminalOutput{TerminalID: t.id, Data: mirrorTruncatedNote}})
			}
			return
		}
		mirrored += len(data)
		s.queue.push(queueItem{event: backend.TerminalOutput{TerminalID: t.id, Data: string(data)}})
	}
	for {
		n, err := t.out.Read(buf)
		if n > 0 {
			chunk := append(carry, buf[:n]...)
			carry = nil
			end := len(chunk)
			// Hold back an incomplete trailing character.
			for i := len(chunk) - 1; i >= 0 && i >= len(chunk)-utf8.UTFMax; i-- {
				if utf8.RuneStart(chunk[i]) {
					if !utf8.FullRune(chunk[i:]) {
						end = i
					}
					break
				}
			}
			carry = append([]byte(nil), chunk[end:]...)
			if end > 0 {
				data := append([]byte(nil), chunk[:end]...)
				t.append(data)
				mirror(data)
			}
		}
		if err != nil {
			if len(carry) > 0 {
				t.append(carry)
				mirror(carry)
			}
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				s.log.Warn().Err(err).Str("terminal", t.id).Msg("reading terminal output")
			}
			return
		}
	}
}

// waitTerminal reaps the command and reports its exit.
func (s *session) waitTerminal(t *terminal) {
	_ = t.cmd.Wait()
	// Background children of the command would keep the output open.
	_ = killGroup(t.pid)
	select {
	case <-t.readerDone:
	case <-time.After(2 * time.Second):
		_ = t.out.Close()
		<-t.readerDone
	}
	_ = t.out.Close()
	t.mu.Lock()
	if st := t.cmd.ProcessState; st != nil {
		if sig := exitSignal(st); sig != "" {
			t.signal = &sig
		} else {
			code := st.ExitCode()
			t.exitCode = &code
		}
	}
	code, sig := t.exitCode, t.signal
	t.mu.Unlock()
	ev := backend.TerminalExited{TerminalID: t.id, ExitCode: code}
	if sig != nil {
		ev.Signal = *sig
	}
	// Queued before wait_for_exit can answer: the agent's next update (the
	// tool call completed) must come after the exit it reports, or the
	// tool call would complete without the terminal's exit code.
	s.queue.push(queueItem{event: ev})
	close(t.exited)
}

func (s *session) terminal(id string) (*terminal, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.terms[id]
	if t == nil {
		return nil, fsError(codeResourceNotFound, "unknown terminal %q", id)
	}
	return t, nil
}

// terminalOutput implements terminal/output.
func (s *session) terminalOutput(id string) (sdk.TerminalOutputResponse, error) {
	t, err := s.terminal(id)
	if err != nil {
		return sdk.TerminalOutputResponse{}, err
	}
	code, sig, done := t.status()
	t.mu.Lock()
	resp := sdk.TerminalOutputResponse{Output: string(t.buf), Truncated: t.truncated}
	t.mu.Unlock()
	if done {
		resp.ExitStatus = &sdk.TerminalExitStatus{ExitCode: code, Signal: sig}
	}
	return resp, nil
}

// waitForExit implements terminal/wait_for_exit.
func (s *session) waitForExit(ctx context.Context, id string) (sdk.WaitForTerminalExitResponse, error) {
	t, err := s.terminal(id)
	if err != nil {
		return sdk.WaitForTerminalExitResponse{}, err
	}
	select {
	case <-t.exited:
	case <-ctx.Done():
		return sdk.WaitForTerminalExitResponse{}, ctx.Err()
	}
	code, sig, _ := t.status()
	return sdk.WaitForTerminalExitResponse{ExitCode: code, Signal: sig}, nil
}

// killTerminal implements terminal/kill: the command stops, the terminal
// stays readable until released.
func (s *session) killTerminal(id string) error {
	t, err := s.terminal(id)
	if err != nil {
		return err
	}
	if _, _, done := t.status(); !done {
		if err := killGroup(t.pid); err != nil {
			return fsError(codeInternal, "killing terminal %q: %v", id, err)
		}
	}
	return nil
}

// releaseTerminal implements terminal/release: kills the command if it
// still runs and forgets the terminal.
func (s *session) releaseTerminal(id string) error {
	s.mu.Lock()
	t := s.terms[id]
	delete(s.terms, id)
	s.mu.Unlock()
	if t == nil {
		return fsError(codeResourceNotFound, "unknown terminal %q", id)
	}
	s.stopTerminal(t)
	s.queue.push(queueItem{event: backend.TerminalReleased{TerminalID: id}})
	return nil
}

func (s *session) stopTerminal(t *terminal) {
	if _, _, done := t.status(); !done {
		_ = killGroup(t.pid)
	}
	<-t.exited
}

// releaseTerminals releases every terminal of the session.
func (s *session) releaseTerminals() {
	s.mu.Lock()
	ids := make([]string, 0, len(s.terms))
	for id := range s.terms {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	for _, id := range ids {
		_ = s.releaseTerminal(id)
	}
}
