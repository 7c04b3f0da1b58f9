// Command soak is the load and endurance test of issue #7 (not part of
// .ci/run; see docs/reliability.md). It starts a whole bridge in process —
// host, bridge, ACP providers running the scripted agent as real
// subprocesses, WebSocket on a loopback port — and drives it with AHP
// clients over real sockets:
//
//	go run ./internal/soak -sessions 100 -turns 100 -clients 10
//
// Every session runs its turns one after the other; each turn ("demo") has
// a tool call that asks permission, which the session's owning client
// approves. Every client also watches the sessions of another client, and
// every client disconnects and reconnects (with replay) at random moments
// between turns. Clients speak AHP 1.0.0: a turn runs on the session's
// default chat, and its permission request is read from the session's
// inputNeeded. At the end, once every session has settled (no chat in
// progress, nothing pending), it checks that every client's reduced state
// of every channel it follows — root, sessions, their default chats —
// equals the host's, that every turn completed, and that heap and
// goroutines return to their baseline once sessions and connections are
// gone. It prints the figures and exits 1 on any failure.
//
// With the single argument "agent" the binary is the scripted ACP agent
// itself, so the soak needs nothing built beforehand.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/ahp-bridge/ahp-bridge/acp"
	"github.com/ahp-bridge/ahp-bridge/ahp/client"
	"github.com/ahp-bridge/ahp-bridge/ahp/host"
	"github.com/ahp-bridge/ahp-bridge/ahp/transport/ws"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/bridge"
	"github.com/ahp-bridge/ahp-bridge/internal/scriptagent"
	"github.com/ahp-bridge/ahp-bridge/mapping"
)

const token = "soak-token"

// epoch is the pinned clock of host and clients: reducers stamp times from
// their own clock, and one clock makes the states comparable byte for byte.
var epoch = time.UnixMilli(1_780_000_000_000)

type config struct {
	sessions, turns, clients, agents int
	reconnectEvery                   time.Duration
	timeout                          time.Duration
	replayBuffer                     int
}

func main() {
	if len(os.Args) == 2 && os.Args[1] == "agent" {
		if err := scriptagent.Main(context.Background(), os.Stdin, os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "scriptagent:", err)
			os.Exit(1)
		}
		return
	}
	var cfg config
	flag.IntVar(&cfg.sessions, "sessions", 100, "sessions")
	flag.IntVar(&cfg.turns, "turns", 100, "turns per session, each with a tool call that needs approval")
	flag.IntVar(&cfg.clients, "clients", 10, "AHP clients; each owns 1/clients of the sessions and watches another client's")
	flag.IntVar(&cfg.agents, "agents", 4, "ACP providers (agent processes); sessions are spread over them")
	flag.DurationVar(&cfg.reconnectEvery, "reconnect-every", 2*time.Second, "mean time between a client's reconnects (0: never)")
	flag.DurationVar(&cfg.timeout, "timeout", 30*time.Minute, "give up after this long")
	flag.IntVar(&cfg.replayBuffer, "replay-buffer", 4096, "host replay ring size")
	flag.Parse()
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "soak: FAILED:", err)
		os.Exit(1)
	}
	fmt.Println("soak: OK")
}

// memory returns the live heap after a full collection, and the goroutines.
func memory() (heap uint64, goroutines int) {
	for range 3 {
		runtime.GC()
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc, runtime.NumGoroutine()
}

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// stats are the soak's counters.
type stats struct {
	turns, toolCalls, approvals atomic.Int64
	reconnects, replays, snaps  atomic.Int64
	errs                        atomic.Int64
	firstErr                    atomic.Pointer[error]
	peakHeap                    atomic.Uint64
}

func (s *stats) fail(err error) {
	s.errs.Add(1)
	s.firstErr.CompareAndSwap(nil, &err)
	fmt.Fprintln(os.Stderr, "soak: error:", err)
}

func run(cfg config) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cwd, err := os.MkdirTemp("", "ahp-soak")
	if err != nil {
		return err
	}
	defer os.RemoveAll(cwd)
	if err := os.WriteFile(filepath.Join(cwd, "README.md"), []byte("# Soak\nThe soak test reads this file.\n"), 0o644); err != nil {
		return err
	}

	baseHeap, baseG := memory()
	log := zerolog.New(os.Stderr).Level(zerolog.WarnLevel).With().Timestamp().Logger()
	var providers []backend.Provider
	for i := range cfg.agents {
		providers = append(providers, acp.NewProvider(acp.Config{
			ID: fmt.Sprintf("script-%d", i), Command: []string{self, "agent"},
		}, log.With().Str("provider", fmt.Sprint(i)).Logger()))
	}
	h := host.New(host.Options{ReplayBuffer: cfg.replayBuffer, Logger: log, Clock: func() int64 { return epoch.UnixMilli() }})
	b := bridge.New(providers, bridge.Options{Approve: mapping.PolicyAsk, Logger: log})
	b.Attach(h)
	h.SetHandler(b)
	if err := b.Start(context.Background()); err != nil {
		return err
	}
	handler := ws.NewHandler(h, ws.Options{Token: token, Logger: log})
	srv := httptest.NewServer(handler)
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + "/?tkn=" + token
	shutdown := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		b.Close(ctx)
		h.Close()
		handler.Close()
		srv.Close()
	}
	shutdownOnce := sync.OnceFunc(shutdown)
	defer shutdownOnce()

	ctx, cancel := context.WithTimeout(context.Background(), cfg.timeout)
	defer cancel()
	st := &stats{}
	clients := make([]*soakClient, cfg.clients)
	for i := range clients {
		c, err := dialClient(ctx, url, fmt.Sprintf("soak-client-%d", i))
		if err != nil {
			return err
		}
		clients[i] = &soakClient{id: i, url: url, c: c}
	}
	fmt.Printf("soak: %d sessions × %d turns, %d clients, %d agent processes, reconnect every ~%v\n",
		cfg.sessions, cfg.turns, cfg.clients, cfg.agents, cfg.reconnectEvery)

	// Create every session through its owner; its watcher subscribes too.
	channels := make([]string, cfg.sessions)
	for i := range channels {
		owner, watcher := clients[i%cfg.clients], clients[(i+1)%cfg.clients]
		ch, err := owner.createSession(ctx, fmt.Sprintf("script-%d", i%cfg.agents), cwd)
		if err != nil {
			return fmt.Errorf("creating session %d: %w", i, err)
		}
		if err := watcher.subscribe(ctx, ch); err != nil {
			return fmt.Errorf("watching session %d: %w", i, err)
		}
		channels[i] = ch
	}
	setupHeap, _ := memory()

	start := time.Now()
	var wg sync.WaitGroup
	stopReconnects := make(chan struct{})
	var rwg sync.WaitGroup
	for _, c := range clients {
		if cfg.reconnectEvery > 0 {
			rwg.Add(1)
			go func() {
				defer rwg.Done()
				c.reconnectLoop(ctx, cfg.reconnectEvery, stopReconnects, st)
			}()
		}
	}
	sampleDone := make(chan struct{})
	go func() { // the peak heap, sampled, and progress every 10 s
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for i := 1; ; i++ {
			select {
			case <-sampleDone:
				return
			case <-t.C:
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				if ms.HeapAlloc > st.peakHeap.Load() {
					st.peakHeap.Store(ms.HeapAlloc)
				}
				if i%20 == 0 {
					fmt.Printf("soak: %v: %d turns done, %d reconnects, heap %s\n",
						time.Since(start).Round(time.Second), st.turns.Load(), st.reconnects.Load(), mib(ms.HeapAlloc))
				}
			}
		}
	}()
	for i, ch := range channels {
		owner := clients[i%cfg.clients]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range cfg.turns {
				if ctx.Err() != nil {
					return
				}
				if err := owner.turn(ctx, ch, n, st); err != nil {
					st.fail(fmt.Errorf("session %d turn %d: %w", i, n, err))
					dumpDiagnostics(h, ch, fmt.Sprintf("session-%d-turn-%d", i, n))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stopReconnects)
	rwg.Wait()
	close(sampleDone)
	elapsed := time.Since(start)
	hs := h.Stats()

	// Every client's state of every channel it follows equals the host's,
	// once the host has settled: a turn's end is followed by the host
	// mirroring the chat's status into the session's catalogue, so a
	// state taken right after the turn-ending action is not final.
	compared := 0
	settleCtx, settleCancel := context.WithTimeout(ctx, time.Minute)
	if err := hostSettled(settleCtx, h, channels); err != nil {
		st.fail(err)
	}
	for _, c := range clients {
		n, err := c.compare(settleCtx, h)
		compared += n
		if err != nil {
			st.fail(err)
		}
	}
	settleCancel()
	// Every session has all its turns, all complete.
	for i, ch := range channels {
		chat := defaultChat(h, ch)
		h.ReadChat(chat, func(s *wire.ChatState) {
			complete := 0
			for _, t := range s.Turns {
				if t.State == wire.TurnStateComplete {
					complete++
				}
			}
			if complete != cfg.turns || s.ActiveTurn != nil {
				st.fail(fmt.Errorf("session %d: %d of %d turns complete (active: %v)", i, complete, cfg.turns, s.ActiveTurn != nil))
			}
		})
	}
	loadedHeap, loadedG := memory()

	// Tear down sessions and connections, then measure again.
	for i, ch := range channels {
		if err := clients[i%cfg.clients].dispose(ctx, ch); err != nil {
			st.fail(fmt.Errorf("disposing session %d: %w", i, err))
		}
	}
	for _, c := range clients {
		c.close()
	}
	waitFor(func() bool { return h.Stats().Connections == 0 && h.Stats().Sessions == 0 }, 30*time.Second)
	afterHeap, afterG := memory()
	shutdownOnce()
	waitFor(func() bool { _, g := memory(); return g <= baseG+2 }, 30*time.Second)
	finalHeap, finalG := memory()

	fmt.Printf("soak: %d turns, %d tool calls approved, in %v (%.0f turns/s)\n",
		st.turns.Load(), st.approvals.Load(), elapsed.Round(time.Millisecond), float64(st.turns.Load())/elapsed.Seconds())
	fmt.Printf("soak: %d envelopes sequenced (last serverSeq %d), %d frames queued, %d slow connections closed\n",
		hs.EnvelopesEncoded, hs.ServerSeq, hs.FramesQueued, hs.SlowConnectionsClosed)
	fmt.Printf("soak: %d reconnects: %d replayed, %d fell back to snapshots\n", st.reconnects.Load(), st.replays.Load(), st.snaps.Load())
	fmt.Printf("soak: %d channel states compared client-vs-host, all equal: %v\n", compared, st.errs.Load() == 0)
	fmt.Printf("soak: heap: baseline %s, after setup %s, peak %s, loaded %s, after dispose+disconnect %s, after shutdown %s\n",
		mib(baseHeap), mib(setupHeap), mib(st.peakHeap.Load()), mib(loadedHeap), mib(afterHeap), mib(finalHeap))
	fmt.Printf("soak: goroutines: baseline %d, loaded %d, after dispose+disconnect %d, after shutdown %d\n",
		baseG, loadedG, afterG, finalG)

	if n := st.errs.Load(); n > 0 {
		return fmt.Errorf("%d errors, the first: %w", n, *st.firstErr.Load())
	}
	if want := int64(cfg.sessions * cfg.turns); st.turns.Load() != want {
		return fmt.Errorf("%d turns ran, want %d", st.turns.Load(), want)
	}
	if finalG > baseG+2 {
		return fmt.Errorf("goroutines leaked: %d at the start, %d after shutdown", baseG, finalG)
	}
	// The replay ring may keep up to replayBuffer envelopes after the
	// sessions are gone; anything beyond a few MiB over baseline is a leak.
	if finalHeap > baseHeap+16<<20 {
		return fmt.Errorf("heap did not return to baseline: %s at the start, %s after shutdown", mib(baseHeap), mib(finalHeap))
	}
	return nil
}

// dumpDiagnostics writes the host's state of a session whose turn failed
// and every goroutine's stack to files in the temporary directory, for
// the person who has to find out why.
func dumpDiagnostics(h *host.Host, ch, name string) {
	base := filepath.Join(os.TempDir(), "ahp-soak-"+name)
	h.ReadSession(ch, func(s *wire.SessionState) {
		if b, err := json.MarshalIndent(s, "", "  "); err == nil {
			_ = os.WriteFile(base+".session.json", b, 0o644)
		}
	})
	h.ReadChat(defaultChat(h, ch), func(s *wire.ChatState) {
		if b, err := json.MarshalIndent(s.ActiveTurn, "", "  "); err == nil {
			_ = os.WriteFile(base+".active-turn.json", b, 0o644)
		}
	})
	if f, err := os.Create(base + ".goroutines.txt"); err == nil {
		_ = pprof.Lookup("goroutine").WriteTo(f, 2)
		_ = f.Close()
	}
	fmt.Fprintf(os.Stderr, "soak: diagnostics in %s.*\n", base)
}

// defaultChat is the URI of a session's default chat as the host has it,
// "" for a session it does not have.
func defaultChat(h *host.Host, session string) string {
	var chat string
	h.ReadSession(session, func(s *wire.SessionState) {
		if s.DefaultChat != nil {
			chat = *s.DefaultChat
		}
	})
	return chat
}

// settled reports whether a session is at rest: no chat in progress (as
// its catalogue mirrors them) and nothing waiting for a client.
func settled(s *wire.SessionState) bool {
	if len(s.InputNeeded) > 0 {
		return false
	}
	for _, c := range s.Chats {
		if c.Status.Has(wire.SessionStatusInProgress) {
			return false
		}
	}
	return true
}

// chatSettled reports whether a chat is at rest: no turn running or queued.
func chatSettled(s *wire.ChatState) bool {
	return s.ActiveTurn == nil && len(s.QueuedMessages) == 0 && s.SteeringMessage == nil
}

// hostSettled waits until every session and its default chat is at rest
// in the host.
func hostSettled(ctx context.Context, h *host.Host, sessions []string) error {
	for _, ch := range sessions {
		chat := defaultChat(h, ch)
		for {
			ok := true
			h.ReadSession(ch, func(s *wire.SessionState) { ok = settled(s) })
			h.ReadChat(chat, func(s *wire.ChatState) { ok = ok && chatSettled(s) })
			if ok {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("session %s did not settle in the host: %w", ch, ctx.Err())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	return nil
}

func waitFor(cond func() bool, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for !cond() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
}

func dialClient(ctx context.Context, url, id string) (*client.Client, error) {
	c, err := client.Dial(ctx, url, client.Options{ClientID: id, Now: func() time.Time { return epoch }})
	if err != nil {
		return nil, err
	}
	if _, err := c.Initialize(ctx, wire.RootChannel); err != nil {
		_ = c.Close()
		return nil, err
	}
	go drain(c)
	return c, nil
}

// drain discards the client's event queue: the soak reads state, not events.
func drain(c *client.Client) {
	for {
		if _, err := c.Next(context.Background()); err != nil {
			return
		}
	}
}

// soakClient is one AHP client. Turns hold mu for reading; a reconnect
// holds it for writing, so connections change only between turns — while
// the client is away, the sessions it watches go on, and it must catch up
// by replay.
type soakClient struct {
	id  int
	url string
	mu  sync.RWMutex
	c   *client.Client
}

func (s *soakClient) createSession(ctx context.Context, provider, cwd string) (string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	ch := client.NewSessionURI()
	if err := s.c.CreateSession(ctx, wire.CreateSessionParams{Channel: ch, Provider: wire.Ptr(provider), WorkingDirectories: []string{"file://" + cwd}}); err != nil {
		return "", err
	}
	if _, err := s.c.Subscribe(ctx, ch); err != nil {
		return "", err
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	st, err := s.c.WaitFor(wctx, ch, func(st *wire.SessionState) bool { return st.Lifecycle != wire.SessionLifecycleCreating })
	if err != nil {
		return "", err
	}
	if st.Lifecycle != wire.SessionLifecycleReady {
		return "", fmt.Errorf("session creation failed: %+v", st.CreationError)
	}
	return ch, nil
}

func (s *soakClient) subscribe(ctx context.Context, ch string) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, err := s.c.Subscribe(ctx, ch)
	return err
}

func (s *soakClient) dispose(ctx context.Context, ch string) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.c.DisposeSession(ctx, ch)
}

func (s *soakClient) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.c.Close()
}

// turn runs one "demo" turn on the session's default chat: start it, wait
// for the session to ask for the tool call's permission, approve it, and
// wait for the turn to complete.
func (s *soakClient) turn(ctx context.Context, ch string, n int, st *stats) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c := s.c
	tctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	turnID := client.NewUUID()
	if _, err := c.StartTurn(tctx, ch, turnID, client.UserMessage(fmt.Sprintf("demo %d", n))); err != nil {
		return fmt.Errorf("starting the turn: %w", err)
	}
	var ask client.Confirmation
	if _, err := c.WaitFor(tctx, ch, func(s *wire.SessionState) bool {
		for _, p := range client.PendingConfirmations(s) {
			if p.TurnID == turnID {
				ask = p
				return true
			}
		}
		return false
	}); err != nil {
		return fmt.Errorf("waiting for the permission request: %w", err)
	}
	st.toolCalls.Add(1)
	if _, err := c.ApproveToolCall(tctx, ask.Chat, turnID, ask.ToolCallID, "allow"); err != nil {
		return fmt.Errorf("approving: %w", err)
	}
	st.approvals.Add(1)
	turn, err := c.WaitForTurn(tctx, ch, turnID)
	if err != nil {
		return fmt.Errorf("waiting for the turn to end: %w", err)
	}
	if turn.State != wire.TurnStateComplete {
		return fmt.Errorf("turn ended %s: %+v", turn.State, client.TurnError(turn))
	}
	st.turns.Add(1)
	return nil
}

// reconnectLoop drops and resumes the connection at random intervals.
func (s *soakClient) reconnectLoop(ctx context.Context, every time.Duration, stop <-chan struct{}, st *stats) {
	for {
		d := time.Duration(rand.Int64N(int64(2 * every)))
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-time.After(d):
		}
		if err := s.reconnect(ctx, st); err != nil {
			st.fail(fmt.Errorf("client %d: reconnect: %w", s.id, err))
			return
		}
	}
}

func (s *soakClient) reconnect(ctx context.Context, st *stats) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	prev := s.c
	_ = prev.Close()
	// Stay away a little so that watched sessions move on meanwhile.
	time.Sleep(time.Duration(rand.Int64N(int64(200 * time.Millisecond))))
	c, res, err := client.Reconnect(ctx, s.url, prev, client.Options{Now: func() time.Time { return epoch }})
	if err != nil {
		return err
	}
	go drain(c)
	s.c = c
	st.reconnects.Add(1)
	switch r := res.Value.(type) {
	case *wire.ReconnectReplayResult:
		st.replays.Add(1)
		if len(r.Missing) > 0 {
			return fmt.Errorf("replay reports missing channels %v", r.Missing)
		}
	case *wire.ReconnectSnapshotResult:
		st.snaps.Add(1)
	}
	return nil
}

// compare checks every channel the client follows against the host: the
// root, and each session with its default chat. It first waits until the
// client has seen each session settle, then pings: the host answers a
// request after every envelope it queued for the connection before it, so
// once the host is settled the answer means the client is up to date.
func (s *soakClient) compare(ctx context.Context, h *host.Host) (int, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	channels := s.channels(ctx)
	for _, ch := range channels {
		if _, err := s.c.WaitFor(ctx, ch, settled); err != nil {
			return 0, fmt.Errorf("client %d: session %s did not settle: %w", s.id, ch, err)
		}
		if _, err := s.c.WaitForChat(ctx, ch, chatSettled); err != nil {
			return 0, fmt.Errorf("client %d: the default chat of %s did not settle: %w", s.id, ch, err)
		}
	}
	if err := s.c.Ping(ctx); err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	root, err := s.c.Root()
	if err != nil {
		return 0, err
	}
	var hostRoot []byte
	h.ReadRoot(func(r *wire.RootState) { hostRoot, err = json.Marshal(r) })
	if err != nil {
		return 0, err
	}
	if mine, _ := json.Marshal(root); string(mine) != string(hostRoot) {
		errs = append(errs, fmt.Errorf("client %d: root state differs from the host's:\nclient %s\nhost   %s", s.id, mine, hostRoot))
	}
	n++
	for _, ch := range channels {
		mine, err := s.c.Session(ch)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var hostJSON []byte
		var herr error
		if !h.ReadSession(ch, func(st *wire.SessionState) { hostJSON, herr = json.Marshal(st) }) {
			errs = append(errs, fmt.Errorf("client %d follows %s, which the host does not have", s.id, ch))
			continue
		}
		if err := sameJSON(mine, hostJSON, herr); err != nil {
			errs = append(errs, fmt.Errorf("client %d: state of %s: %w", s.id, ch, err))
		}
		n++
		chat, err := s.c.DefaultChat(ch)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		mineChat, err := s.c.Chat(chat)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !h.ReadChat(chat, func(st *wire.ChatState) { hostJSON, herr = json.Marshal(st) }) {
			errs = append(errs, fmt.Errorf("client %d follows %s, which the host does not have", s.id, chat))
			continue
		}
		if err := sameJSON(mineChat, hostJSON, herr); err != nil {
			errs = append(errs, fmt.Errorf("client %d: state of %s: %w", s.id, chat, err))
		}
		n++
	}
	return n, errors.Join(errs...)
}

// sameJSON compares a client's state with the host's encoding of it.
func sameJSON(mine any, host []byte, hostErr error) error {
	if hostErr != nil {
		return hostErr
	}
	b, err := json.Marshal(mine)
	if err != nil {
		return err
	}
	if string(b) != string(host) {
		return fmt.Errorf("differs from the host's (%d vs %d bytes):\nclient %s\nhost   %s", len(b), len(host), b, host)
	}
	return nil
}

// channels lists the session channels the client follows, from the
// server's session list intersected with what it holds.
func (s *soakClient) channels(ctx context.Context) []string {
	var out []string
	sessions, err := s.c.ListSessions(ctx)
	if err != nil {
		return nil
	}
	for _, sum := range sessions {
		if _, err := s.c.Session(sum.Resource); err == nil {
			out = append(out, sum.Resource)
		}
	}
	return out
}
