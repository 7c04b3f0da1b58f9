// Package host is the AHP server core: it speaks JSON-RPC 2.0 over any
// transport.Conn, owns every channel's state (root, sessions, their chats,
// terminals) in the newest dialect it speaks, runs the sequencer that
// validates, reduces, numbers (serverSeq) and broadcasts every action, keeps
// the replay ring used by `reconnect`, and protects itself from slow clients
// with bounded per-connection queues. Each connection speaks the protocol
// version it negotiated: package codec translates at the connection edge,
// so the sequencer never knows which versions are connected.
//
// The layer behind it (agents, permission policy) plugs in through the
// Handler interface and submits server-originated actions with Dispatch.
package host

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/ahp-bridge/ahp-bridge/ahp/codec"
	"github.com/ahp-bridge/ahp-bridge/ahp/host/workspace"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/logfield"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// RootURI is the root channel.
const RootURI = wire.RootChannel

// Defaults applied by New for zero Options fields.
const (
	DefaultReplayBuffer            = 4096
	DefaultReplayBytes             = 8 << 20
	DefaultOutboundQueue           = 8192
	DefaultMaxSubscriptionsPerConn = 1024
	DefaultMaxSessions             = 1024
	DefaultMaxPendingRequests      = 64
	DefaultDrainTimeout            = 10 * time.Second
	DefaultFetchTurnsLimit         = 50
	MaxFetchTurnsLimit             = 1000
)

// Options configures a Host. The zero value is usable.
type Options struct {
	// ReplayBuffer is how many sequenced envelopes are kept for
	// `reconnect` replay (default 4096).
	ReplayBuffer int
	// ReplayBytes bounds the same envelopes by their encoded size
	// (default 8 MiB), so that a long response is not held a second time
	// for replay; a client that reconnects from further back gets a
	// snapshot.
	ReplayBytes int
	// OutboundQueue is the per-connection outbound queue length in
	// messages (default 8192: well under a second of a fast agent's stream,
	// enough to ride out a network hiccup; the frames are shared with the
	// other connections, so a full queue costs little of its own). A
	// connection whose queue overflows is closed; it can reconnect and
	// replay.
	OutboundQueue int
	// DrainTimeout bounds how long a connection whose peer ended its
	// input cleanly (io.EOF: stdin closed, a WebSocket closed normally)
	// goes on answering its requests and writing the frames already
	// queued for it before it is closed (default 10s, the WebSocket
	// transport's default write timeout).
	DrainTimeout time.Duration
	// Clock returns the current time in Unix milliseconds (default
	// time.Now); used for timestamps in state.
	Clock func() int64
	// Logger receives host events.
	Logger zerolog.Logger
	// MaxSubscriptionsPerConn bounds subscriptions per connection (default 1024).
	MaxSubscriptionsPerConn int
	// MaxSessions bounds live sessions (default 1024).
	MaxSessions int
	// MaxPendingRequests bounds the requests of one connection that are
	// answered asynchronously (completions, the resource commands) and still
	// running (default 64). Further ones are answered with an error at
	// once, so a client cannot make the host start unbounded work.
	MaxPendingRequests int
	// ServerName is used in logs.
	ServerName string
	// ServerVersion is reported in the initialize result's serverInfo.
	ServerVersion string
	// DefaultDirectory, when set, is a directory of this machine (an
	// absolute path or a file: URI) where clients start browsing: the
	// initialize result's defaultDirectory names it as a file: URI, and it
	// is a browse root (see BrowseRoots).
	DefaultDirectory string
	// BrowseRoots are more directories (absolute paths or file: URIs)
	// under which any connection may list directories and resolve paths
	// (resourceList, resourceResolve: names, types, sizes and times, never
	// contents) without a session, so that a client can pick the working
	// directory of a new session. Everything else stays confined to the
	// sessions' working directories (package workspace).
	BrowseRoots []string
	// CompletionTriggerCharacters is advertised in the initialize result.
	CompletionTriggerCharacters []string
	// Agents is the initial root `agents` list. It may also be replaced
	// later with a root/agentsChanged action through Dispatch.
	Agents []wire.AgentInfo
	// WireLog, when set, is called with every frame read ("in") and
	// written ("out"), from the connections' goroutines concurrently. It
	// must be safe for concurrent use and must not retain or modify frame.
	WireLog func(dir string, frame []byte)
	// NewID returns a fresh identifier for server-started turns (default:
	// random UUIDv4).
	NewID func() string
	// Store keeps sessions and their turns across restarts (persist.go
	// says what is written when, restore.go how it comes back); nil keeps
	// everything in memory. The caller opens and closes it; Close stops the
	// host's use of it first.
	Store store.Store
	// OnStoreWrite, when set, is called after every write to Store with
	// how long it took and its error (metrics). It must be cheap and safe
	// for concurrent use.
	OnStoreWrite func(d time.Duration, err error)
	// ReadOnlyFiles refuses every change to the workspace's files through
	// the resource commands (resourceWrite, resourceMkdir, …) with
	// PermissionDenied; reading, listing and watching still work.
	ReadOnlyFiles bool
	// MaxWatchDirectories bounds the directories one resource watch may
	// watch (default DefaultMaxWatchDirectories); a larger tree is refused
	// with an error that says so, rather than watched in part.
	MaxWatchDirectories int

	// ArchiveRetention, when positive, deletes archived sessions last
	// modified longer ago than this, at start and periodically
	// (retention.go). Zero keeps them until `ahp-bridge sessions delete`.
	ArchiveRetention time.Duration

	// maxWatchesPerConn overrides workspace.Options.MaxWatchesPerConn's
	// default in tests.
	maxWatchesPerConn int
}

// Stats are counters for monitoring and tests.
type Stats struct {
	// Connections is the number of connections being served.
	Connections int
	// Sessions is the number of live sessions.
	Sessions int
	// ServerSeq is the last assigned serverSeq.
	ServerSeq int64
	// EnvelopesEncoded counts action envelopes encoded; each is encoded
	// once however many connections receive it.
	EnvelopesEncoded int64
	// FramesQueued counts frames queued to connections.
	FramesQueued int64
	// SlowConnectionsClosed counts connections closed because their
	// outbound queue overflowed.
	SlowConnectionsClosed int64
}

type counters struct {
	encoded    atomic.Int64
	queued     atomic.Int64
	slowClosed atomic.Int64
	panics     atomic.Int64 // recovered panics while handling messages (bugs)
}

// Host is an AHP server. Create it with New, call SetHandler, then serve
// connections with ServeConn; Close ends everything.
type Host struct {
	opts    Options
	log     zerolog.Logger
	handler Handler

	ctx    context.Context // cancelled by Close; parent of handler calls
	cancel context.CancelFunc
	wg     sync.WaitGroup // channel workers

	// mu is the sequencer lock. It guards seq, ring, channels, conns and
	// every subscription set, and is always taken after a channel's own
	// lock, never before.
	ext externalState // the agents' own sessions (external.go)

	mu       sync.Mutex
	seq      int64
	ring     *replayRing
	channels map[string]*channel
	root     *channel
	conns    map[*conn]struct{}
	nextConn uint64
	closed   bool
	sessions int // live sessions
	// clientVersions is the version each client negotiated, for a
	// reconnect that opens a new connection (bounded).
	clientVersions map[string]codec.Version
	// codecs holds one codec per version spoken (see codecLocked).
	codecs map[codec.Version]codec.Codec

	// dir tells codecs which chat is which session's default one.
	dir *directory

	stats counters
	ops   opsCounters          // see ops.go
	ws    *workspace.Workspace // the workspace's files and resource watches (workspace.go)

	// ds is the durable side (persist.go); nil without Options.Store.
	ds *durable
}

// New returns a Host with the given options. With a Store whose serverSeq
// high-water mark cannot be read, the host logs why and keeps everything
// in memory; Open reports that error instead.
func New(opts Options) *Host {
	h, err := Open(opts)
	if err != nil {
		h.log.Error().Err(err).Msg("the state store cannot be used; sessions are kept in memory only")
	}
	return h
}

// Open is New for a caller that wants to know when Options.Store cannot be
// used: it then returns the error with a host that keeps everything in
// memory.
func Open(opts Options) (*Host, error) {
	if opts.ReplayBuffer <= 0 {
		opts.ReplayBuffer = DefaultReplayBuffer
	}
	if opts.ReplayBytes <= 0 {
		opts.ReplayBytes = DefaultReplayBytes
	}
	if opts.OutboundQueue <= 0 {
		opts.OutboundQueue = DefaultOutboundQueue
	}
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = DefaultDrainTimeout
	}
	if opts.Clock == nil {
		opts.Clock = func() int64 { return time.Now().UnixMilli() }
	}
	if opts.MaxSubscriptionsPerConn <= 0 {
		opts.MaxSubscriptionsPerConn = DefaultMaxSubscriptionsPerConn
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	if opts.MaxPendingRequests <= 0 {
		opts.MaxPendingRequests = DefaultMaxPendingRequests
	}
	if opts.NewID == nil {
		opts.NewID = newUUID
	}
	if opts.MaxWatchDirectories <= 0 {
		opts.MaxWatchDirectories = DefaultMaxWatchDirectories
	}
	log := opts.Logger
	if opts.ServerName != "" {
		log = log.With().Str("server", opts.ServerName).Logger()
	}
	h := &Host{
		opts:     opts,
		log:      log,
		ring:     newReplayRing(opts.ReplayBuffer, opts.ReplayBytes),
		channels: make(map[string]*channel),
		conns:    make(map[*conn]struct{}),

		clientVersions: make(map[string]codec.Version),
		codecs:         make(map[codec.Version]codec.Codec),
		dir:            newDirectory(),
		ws:             newWorkspace(opts, log),
	}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	h.root = newChannel(RootURI, chanRoot)
	agents := opts.Agents
	if agents == nil {
		agents = []wire.AgentInfo{}
	}
	h.root.root = &wire.RootState{Agents: agents, ActiveSessions: wire.Ptr[int64](0)}
	h.channels[RootURI] = h.root
	if opts.Store != nil {
		if err := h.openDurable(opts.Store); err != nil {
			return h, err
		}
		h.watchOthers() // others.go
	}
	if opts.ArchiveRetention > 0 {
		h.startRetention()
	}
	return h, nil
}

// SetHandler installs the handler. Call it before serving connections.
func (h *Host) SetHandler(b Handler) { h.handler = b }

// Stats returns a snapshot of the counters.
func (h *Host) Stats() Stats {
	h.mu.Lock()
	s := Stats{Connections: len(h.conns), ServerSeq: h.seq, Sessions: h.sessions}
	h.mu.Unlock()
	s.EnvelopesEncoded = h.stats.encoded.Load()
	s.FramesQueued = h.stats.queued.Load()
	s.SlowConnectionsClosed = h.stats.slowClosed.Load()
	return s
}

// Close ends every connection, stops the channel workers and cancels
// handler calls in flight. Connections served afterwards are refused.
// It does not wait for ServeConn calls to return; their callers do.
func (h *Host) Close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	conns := make([]*conn, 0, len(h.conns))
	for c := range h.conns {
		conns = append(conns, c)
	}
	var workers []*worker
	for _, ch := range h.channels {
		if ch.worker != nil {
			workers = append(workers, ch.worker)
		}
	}
	h.mu.Unlock()
	for _, c := range conns {
		c.terminate("the server is shutting down")
	}
	h.cancel()
	for _, w := range workers {
		w.close()
	}
	h.closeWatches()
	h.wg.Wait()
	h.closeDurable()
}

func (h *Host) wireLog(dir string, frame []byte) {
	if h.opts.WireLog != nil {
		h.opts.WireLog(dir, frame)
	}
}

// ServeConn runs one client connection until the peer goes away, the
// connection is closed for falling behind, ctx is cancelled or the host is
// closed. It returns nil when the peer disconnected cleanly.
func (h *Host) ServeConn(ctx context.Context, tc Conn) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		_ = tc.Close()
		return errors.New("host: the server is shutting down")
	}
	h.nextConn++
	c := &conn{
		h:    h,
		id:   h.nextConn,
		tc:   tc,
		qcap: h.opts.OutboundQueue,
		wake: make(chan struct{}, 1),
		kill: make(chan struct{}),
		subs: make(map[string]*channel),
	}
	c.log = logfield.Uint64(h.log, "conn", c.id) // a hook, not With: see logfield
	h.conns[c] = struct{}{}
	h.mu.Unlock()

	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Whatever ends the connection calls terminate, which closes the
	// transport and so unblocks the read loop below. The contexts are
	// watched with AfterFunc rather than by a goroutine per connection
	// (idle connections must be cheap, docs/performance.md).
	stopConnCtx := context.AfterFunc(cctx, func() { c.terminate("the connection's context ended") })
	defer stopConnCtx()
	stopHostCtx := context.AfterFunc(h.ctx, func() { c.terminate("the server is shutting down") })
	defer stopHostCtx()
	var loops sync.WaitGroup
	loops.Add(1)
	go func() {
		defer loops.Done()
		c.writeLoop()
	}()

	var readErr error
	for {
		msg, err := tc.ReadMessage()
		if err != nil {
			readErr = err
			break
		}
		h.wireLog("in", msg)
		h.handleFrame(cctx, c, msg)
	}
	select {
	case <-c.kill:
		// The server ended the connection (slow reader, failed
		// negotiation, shutdown); the read error is only its echo.
		readErr = nil
		// kill is closed inside terminate's Once; this call returns only
		// when that Once has finished, so its closing.Add happens before
		// the closing.Wait below (and c.reason is set).
		c.terminate("")
		if h.ctx.Err() == nil && ctx.Err() == nil {
			readErr = fmt.Errorf("host: the server closed the connection: %s", c.reason)
		}
	default:
		if errors.Is(readErr, io.EOF) {
			// A clean end of input means "nothing more to say", not
			// "stop writing": the replies owed are still delivered.
			c.drain("the client disconnected", h.opts.DrainTimeout)
			readErr = nil
		} else {
			c.terminate("read failed: " + readErr.Error())
		}
	}
	cancel()
	loops.Wait()
	c.closeStreams()
	c.closing.Wait()
	c.reqWG.Wait()
	h.dropConn(c)
	select {
	case <-ctx.Done():
		return ctx.Err()
	default:
	}
	return readErr
}

// dropConn forgets a finished connection and its subscriptions.
func (h *Host) dropConn(c *conn) {
	h.filesDropped(c)
	h.mu.Lock()
	delete(h.conns, c)
	left := make([]*channel, 0, len(c.subs))
	for uri, ch := range c.subs {
		ch.dropSub(c)
		delete(c.subs, uri)
		left = append(left, ch)
	}
	groups := groupsOf(left) // archive.go
	clientID := c.clientID
	stillConnected := false
	for o := range h.conns {
		if o.clientID == clientID {
			stillConnected = true
			break
		}
	}
	h.mu.Unlock()
	if !stillConnected {
		h.releaseActiveClient(clientID, func(string) bool { return true })
	}
	h.unloadReleased(groups)
}

func itoa(n int) string { return strconv.Itoa(n) }

// errClosed is returned by Dispatch and friends after Close.
var errClosed = errors.New("host: closed")

// errUnknownChannel wraps channel lookups that fail.
func errUnknownChannel(uri string) error {
	return fmt.Errorf("host: no channel %q", uri)
}

// newUUID returns a random RFC 4122 version 4 UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
