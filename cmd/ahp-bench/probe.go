package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/ahp-bridge/ahp-bridge/internal/scriptagent"
)

// probe is a minimal AHP client for measuring: it speaks just enough
// JSON-RPC to initialize, create a session, subscribe to where its turns
// stream and start a turn there, and otherwise only scans incoming `action`
// frames for the bench agent's write stamps, so that the measuring side
// costs as little CPU as possible (no state reduction, no JSON decoding of
// envelopes).
//
// A light probe (dialProbe's light) does even less with the action frames
// of a flood: it counts them and looks for the last chunk's index, so that
// a fan-out of many probes in this one process measures what the bridge
// can serve rather than what the probes can read (see bridgedWith).
//
// It speaks one dialect (see protocols): 1.0.0, the host's own, or 0.7.0 (both chat dialects), where a
// session's turns stream on its default chat (`chat/*` on an `ahp-chat:`
// channel), or 0.3.0, served by the bridge's 0.3.0 codec as a projection,
// where they stream on the session channel itself (`session/delta`, …).
type probe struct {
	ws      *websocket.Conn
	version string // the AHP version it offers, and requires the bridge to pick
	// lastMark, set for a light probe, is the last chunk's "#<index>":
	// the frame that holds it ends the flood for this probe. It is looked
	// for in the last tail bytes of each action frame only: the last chunk
	// of a frame's text ends the text, which ends the frame but for the
	// envelope's last members, and a coalesced frame holds up to 32 KiB.
	lastMark []byte
	tail     int

	wmu    sync.Mutex
	nextID int

	mu      sync.Mutex
	waiting map[int]chan rpcReply
	marks   map[string]chan struct{} // frame substring → closed when seen

	counter // filled by the read loop only; read it after done is closed

	// approver, when set, answers every tool call confirmation its turns
	// ask for (a toolCallReady without "confirmed") with an approval; the
	// scale scenario's first client of each session is one. checkSeq
	// checks that serverSeq increases on every channel (seqErrors).
	approver, checkSeq bool
	turnPrefix         string // "chat/" or "session/" (0.3.0): where the probe's turn actions go
	seqs               []chanSeq
	clientSeq          int

	// stalled, when set, holds the read loop before its next frame until
	// the channel is closed: a client that stops reading.
	stalled chan struct{}
	done    chan struct{} // the read loop ended
	err     error
}

type rpcReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// dialProbe connects to url and starts the read loop; want is the number of
// chunk stamps after which full is closed, version the AHP version the
// probe speaks (one of protocols). A light probe only counts action frames
// until the one with chunk want-1 (of size bytes), and records neither
// latency nor order.
func dialProbe(ctx context.Context, url string, want int, version string, light bool, size int) (*probe, error) {
	if !slices.Contains(protocols, version) {
		return nil, fmt.Errorf("a probe cannot speak AHP %q (it speaks %s)", version, strings.Join(protocols, ", "))
	}
	d := websocket.Dialer{ReadBufferSize: 64 << 10, WriteBufferSize: 4 << 10, HandshakeTimeout: 10 * time.Second}
	ws, _, err := d.DialContext(ctx, url, nil)
	if err != nil {
		return nil, fmt.Errorf("connecting a probe to %s: %w", url, err)
	}
	p := &probe{ws: ws, version: version, waiting: map[int]chan rpcReply{}, marks: map[string]chan struct{}{},
		counter: newCounter(want), done: make(chan struct{}), turnPrefix: "chat/"}
	if version == v030 {
		p.turnPrefix = "session/"
	}
	if size > 0 {
		p.pad = max(size, stampLen+9) - stampLen - 9
	}
	if light && want > 0 {
		p.lastMark, p.tail = fmt.Appendf(nil, "#%08d", want-1), size+512
	}
	go p.readLoop()
	return p, nil
}

func (p *probe) close() {
	_ = p.ws.Close()
	<-p.done
}

// call sends a JSON-RPC request and waits for its reply.
func (p *probe) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	p.wmu.Lock()
	p.nextID++
	id := p.nextID
	ch := make(chan rpcReply, 1)
	p.mu.Lock()
	p.waiting[id] = ch
	p.mu.Unlock()
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err == nil {
		err = p.ws.WriteMessage(websocket.TextMessage, b)
	}
	p.wmu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("sending %s: %w", method, err)
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return nil, fmt.Errorf("%s failed: %d %s", method, r.Error.Code, r.Error.Message)
		}
		return r.Result, nil
	case <-p.done:
		return nil, fmt.Errorf("%s: the connection ended: %w", method, p.err)
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// expect returns a channel closed once a frame containing s arrives.
// Register it before the action that causes the frame.
func (p *probe) expect(s string) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	ch := make(chan struct{})
	p.marks[s] = ch
	return ch
}

func (p *probe) readLoop() {
	defer close(p.done)
	var buf bytes.Buffer
	for {
		p.mu.Lock()
		stall := p.stalled
		p.mu.Unlock()
		if stall != nil {
			<-stall
		}
		_, r, err := p.ws.NextReader()
		if err != nil {
			p.err = err
			return
		}
		buf.Reset()
		if _, err := buf.ReadFrom(r); err != nil {
			p.err = err
			return
		}
		now := time.Now()
		frame := buf.Bytes()
		select {
		case <-p.full: // summarize may be reading the counts
		default:
			p.frames++
			p.bytes += int64(len(frame))
		}
		if p.scan(frame, now) {
			continue
		}
		p.control(frame)
	}
}

var actionPrefix = []byte(`{"jsonrpc":"2.0","method":"action"`)

// scan records every bench stamp in an action frame; it reports whether
// the frame was an action frame.
func (p *probe) scan(frame []byte, now time.Time) bool {
	if !bytes.HasPrefix(frame, actionPrefix) {
		return false
	}
	full := false
	select {
	case <-p.full: // counted to the last chunk: summarize reads it now
		full = true
	default:
		p.actions++
	}
	if p.lastMark != nil {
		// A stamp is "T<19 digits>#<8 digits>", so "#<8 digits>" of the
		// last index occurs in no earlier chunk.
		if !full && bytes.Contains(frame[max(len(frame)-p.tail, 0):], p.lastMark) {
			p.lastAt = now
			close(p.full)
		}
		return true
	}
	if p.checkSeq && !full {
		p.checkServerSeq(frame)
	}
	if p.observe(frame, now) == 0 {
		p.control(frame)
		if p.approver {
			p.approve(frame, full)
		}
	}
	return true
}

// checkServerSeq counts in seqErrors an action frame whose serverSeq is not
// above the last one on its channel. The frame is the host's envelope
// (encodeEnvelope): the channel first, the serverSeq after the action.
func (p *probe) checkServerSeq(frame []byte) {
	const chanKey, seqKey = `"params":{"channel":"`, `,"serverSeq":`
	i := bytes.Index(frame, []byte(chanKey))
	j := bytes.LastIndex(frame, []byte(seqKey))
	if i < 0 || j < 0 {
		p.seqErrors++
		return
	}
	ch := frame[i+len(chanKey):]
	ch = ch[:max(bytes.IndexByte(ch, '"'), 0)]
	num := frame[j+len(seqKey):]
	k := 0
	for k < len(num) && num[k] >= '0' && num[k] <= '9' {
		k++
	}
	seq, err := strconv.ParseInt(string(num[:k]), 10, 64)
	if err != nil {
		p.seqErrors++
		return
	}
	for i := range p.seqs {
		if e := &p.seqs[i]; e.channel == string(ch) {
			if seq <= e.seq {
				p.seqErrors++
			}
			e.seq = seq
			return
		}
	}
	p.seqs = append(p.seqs, chanSeq{string(ch), seq})
}

// chanSeq is the last serverSeq a probe saw on a channel (a probe follows
// one or two).
type chanSeq struct {
	channel string
	seq     int64
}

// approve answers a tool call that waits for a confirmation (a
// toolCallReady action without "confirmed") with an approval, as a person
// at a client would; it runs on the read loop, which only writes. It counts
// the approvals sent before the probe is full (after, summarize may be
// reading the count), and answers those after too, so that no turn waits.
func (p *probe) approve(frame []byte, full bool) {
	if !bytes.Contains(frame, []byte(`toolCallReady"`)) || bytes.Contains(frame, []byte(`"confirmed"`)) {
		return
	}
	var env struct {
		Params struct {
			Channel string `json:"channel"`
			Action  struct {
				TurnID     string `json:"turnId"`
				ToolCallID string `json:"toolCallId"`
			} `json:"action"`
		} `json:"params"`
	}
	if json.Unmarshal(frame, &env) != nil || env.Params.Action.ToolCallID == "" {
		return
	}
	a := env.Params.Action
	if err := p.dispatch(env.Params.Channel, map[string]any{"type": p.turnPrefix + "toolCallConfirmed", "turnId": a.TurnID,
		"toolCallId": a.ToolCallID, "approved": true, "confirmed": "user-action"}); err == nil && !full {
		p.approvals++
	}
}

// dispatch sends a client action on channel (dispatchAction is a
// notification), with the probe's next clientSeq.
func (p *probe) dispatch(channel string, action map[string]any) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	p.clientSeq++
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "dispatchAction", "params": map[string]any{
		"channel": channel, "clientSeq": p.clientSeq, "action": action}})
	if err != nil {
		return err
	}
	return p.ws.WriteMessage(websocket.TextMessage, b)
}

// counter collects the bench stamps one reader sees.
type counter struct {
	lat       *hist
	actions   int // action frames seen, with stamps or not, until full
	chunks    int // stamps seen
	nextIndex int // next chunk index expected
	misorder  int // stamps whose index was not the next expected
	// pad, when set, is the number of 'x' that follow each stamp (the
	// chunk's size less the stamp): a chunk with another text counts in
	// corrupt, so the full probe checks the exact text. With maxSize set,
	// chunk i is scriptagent.BenchChunkSize(i, minSize, maxSize) bytes
	// instead (the scale scenario).
	pad              int
	minSize, maxSize int
	corrupt          int
	// frames and bytes count every frame the probe read, action or not,
	// until the end; seqErrors the action frames whose serverSeq did not
	// increase on their channel (checkSeq); approvals the confirmations
	// the probe sent (approver).
	frames, bytes        int64
	seqErrors, approvals int
	lastAt               time.Time // when the last stamp was seen
	firstAt              int64     // stamp of chunk 0 (agent write time), UnixNano
	want                 int       // chunks to see before full is closed
	full                 chan struct{}
}

func newCounter(want int) counter {
	c := counter{lat: newHist(), want: want, full: make(chan struct{})}
	if want <= 0 {
		close(c.full)
	}
	return c
}

// observe records every stamp "T<19 digits>#<8 digits>" in b, received at
// now, and returns how many it found.
func (c *counter) observe(b []byte, now time.Time) int {
	found := 0
	rest := b
	for {
		i := bytes.Index(rest, []byte(scriptagent.BenchStampPrefix))
		if i < 0 {
			return found
		}
		s := rest[i:]
		rest = rest[i+1:]
		if len(s) < stampLen+9 || s[stampLen] != '#' || !digits(s[1:stampLen]) || !digits(s[stampLen+1:stampLen+9]) {
			continue
		}
		ns, _ := strconv.ParseInt(string(s[1:stampLen]), 10, 64)
		idx, _ := strconv.Atoi(string(s[stampLen+1 : stampLen+9]))
		found++
		if idx == 0 {
			c.firstAt = ns
		}
		if idx != c.nextIndex {
			c.misorder++
		}
		c.nextIndex = idx + 1
		c.lat.add(now.Sub(time.Unix(0, ns)))
		c.chunks++
		c.lastAt = now
		if c.chunks == c.want {
			close(c.full)
		}
		rest = s[stampLen+9:]
		pad := c.pad
		if c.maxSize > 0 {
			pad = max(scriptagent.BenchChunkSize(idx, c.minSize, c.maxSize), stampLen+9) - stampLen - 9
		}
		if pad > 0 && !padded(rest, pad) || pad == 0 && c.maxSize > 0 && len(rest) > 0 && rest[0] == 'x' {
			c.corrupt++
		}
	}
}

// stampLen is the length of a bench stamp without its index:
// "T<19 digits>".
const stampLen = len(scriptagent.BenchStampPrefix) + scriptagent.BenchStampDigits

// padded reports whether b starts with exactly n 'x' (the rest of a bench
// chunk; what follows is the next chunk's stamp or the end of the text).
func padded(b []byte, n int) bool {
	if len(b) < n || len(b) > n && b[n] == 'x' {
		return false
	}
	for _, c := range b[:n] {
		if c != 'x' {
			return false
		}
	}
	return true
}

func digits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// control handles responses and watched-for frames.
func (p *probe) control(frame []byte) {
	p.mu.Lock()
	for s, ch := range p.marks {
		if bytes.Contains(frame, []byte(s)) {
			close(ch)
			delete(p.marks, s)
		}
	}
	p.mu.Unlock()
	if bytes.HasPrefix(frame, actionPrefix) {
		return
	}
	var m struct {
		ID *int `json:"id"`
		rpcReply
	}
	if json.Unmarshal(frame, &m) != nil || m.ID == nil {
		return
	}
	p.mu.Lock()
	ch := p.waiting[*m.ID]
	delete(p.waiting, *m.ID)
	p.mu.Unlock()
	if ch != nil {
		ch <- m.rpcReply
	}
}

// stall makes the probe stop reading after the frame it is reading now;
// the returned function makes it read again.
func (p *probe) stall() (resume func()) {
	ch := make(chan struct{})
	p.mu.Lock()
	p.stalled = ch
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		p.stalled = nil
		p.mu.Unlock()
		close(ch)
	}
}

// The AHP versions a probe speaks. 1.0.0 is the host's own: what is
// measured is the bridge; 0.7.0 and 0.3.0 add their codecs' translation of
// every envelope on top (issues 12 and 13 compare them).
const (
	v100 = "1.0.0"
	v070 = "0.7.0"
	v030 = "0.3.0"
)

var protocols = []string{v100, v070, v030}

// initialize performs the AHP handshake, subscribing to subs (duplicates
// are sent once: for a 0.3.0 probe a session and where its turns stream
// are the same channel). For a 0.7.0 probe to get a session's turns, subs
// must name the session's default chat too.
func (p *probe) initialize(ctx context.Context, clientID string, subs ...string) error {
	uniq := []string{}
	for _, s := range subs {
		if !slices.Contains(uniq, s) {
			uniq = append(uniq, s)
		}
	}
	res, err := p.call(ctx, "initialize", map[string]any{"channel": "ahp-root://", "protocolVersions": []string{p.version},
		"clientId": clientID, "initialSubscriptions": uniq})
	if err != nil {
		return err
	}
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(res, &r); err != nil || r.ProtocolVersion != p.version {
		return fmt.Errorf("initialize: the bridge chose protocol version %q, not %s", r.ProtocolVersion, p.version)
	}
	return nil
}

// createSession creates channel on the flood provider, subscribes to it
// (and, in 0.7.0, to its default chat) and waits until the session is
// ready. It returns the channel the session's turns stream on and are
// started on: the default chat in 0.7.0, the session itself in 0.3.0.
func (p *probe) createSession(ctx context.Context, channel string) (string, error) {
	ready := p.expect(`"session/ready"`)
	params := map[string]any{"channel": channel, "provider": floodProvider, "workingDirectories": []string{"file:///tmp"}}
	if p.version == v030 {
		params = map[string]any{"channel": channel, "provider": floodProvider, "workingDirectory": "file:///tmp"}
	}
	if _, err := p.call(ctx, "createSession", params); err != nil {
		return "", err
	}
	raw, err := p.call(ctx, "subscribe", map[string]any{"channel": channel})
	if err != nil {
		return "", err
	}
	var snap struct {
		Snapshot struct {
			State struct {
				Lifecycle   string `json:"lifecycle"`
				DefaultChat string `json:"defaultChat"`
			} `json:"state"`
		} `json:"snapshot"`
	}
	if err := json.Unmarshal(raw, &snap); err != nil {
		return "", fmt.Errorf("reading the snapshot of %s: %w", channel, err)
	}
	st := snap.Snapshot.State
	if st.Lifecycle == "creationFailed" {
		return "", fmt.Errorf("creating session %s failed: %s", channel, raw)
	}
	turns := channel // 0.3.0: the session channel carries its turns
	if p.version != v030 {
		if st.DefaultChat == "" {
			return "", fmt.Errorf("session %s names no default chat: %s", channel, raw)
		}
		if _, err := p.call(ctx, "subscribe", map[string]any{"channel": st.DefaultChat}); err != nil {
			return "", err
		}
		turns = st.DefaultChat
	}
	if st.Lifecycle == "ready" {
		return turns, nil // ready before the snapshot was taken
	}
	select {
	case <-ready:
		return turns, nil
	case <-p.done:
		return "", fmt.Errorf("waiting for session %s to be ready: the connection ended: %w", channel, p.err)
	case <-ctx.Done():
		return "", fmt.Errorf("waiting for session %s to be ready: %w", channel, ctx.Err())
	}
}

// idleSession creates a ready session and lets it be: it unsubscribes
// from the session (and its chat), so that only the bridge holds it.
func (p *probe) idleSession(ctx context.Context, channel string) error {
	turns, err := p.createSession(ctx, channel)
	if err != nil {
		return err
	}
	chans := []string{channel}
	if turns != channel {
		chans = []string{turns, channel}
	}
	for _, ch := range chans {
		if _, err := p.call(ctx, "unsubscribe", map[string]any{"channel": ch}); err != nil {
			return err
		}
	}
	return nil
}

// startTurn sends a prompt as a turnStarted action on the channel
// createSession returned (dispatchAction is a notification): a
// chat/turnStarted on the default chat in 0.7.0, a session/turnStarted on
// the session in 0.3.0.
func (p *probe) startTurn(turns, turnID, prompt string) error {
	msg := map[string]any{"text": prompt, "origin": map[string]any{"kind": "user"}}
	action := map[string]any{"type": "chat/turnStarted", "turnId": turnID, "startedAt": time.Now().UTC().Format(time.RFC3339Nano),
		"message": msg}
	if p.version == v030 {
		action = map[string]any{"type": "session/turnStarted", "turnId": turnID, "message": msg}
	}
	if err := p.dispatch(turns, action); err != nil {
		return fmt.Errorf("sending the prompt: %w", err)
	}
	return nil
}

// waitFull waits until the probe has seen all its chunks.
func (p *probe) waitFull(ctx context.Context) error {
	select {
	case <-p.full:
		return nil
	case <-p.done:
		select {
		case <-p.full:
			return nil
		default:
		}
		if errors.Is(p.err, io.ErrUnexpectedEOF) || websocket.IsUnexpectedCloseError(p.err) {
			return fmt.Errorf("the bridge closed the connection after %d of %d chunks: %w", p.chunks, p.want, p.err)
		}
		return fmt.Errorf("the connection ended after %d of %d chunks: %w", p.chunks, p.want, p.err)
	case <-ctx.Done():
		return fmt.Errorf("%d of %d chunks arrived: %w", p.chunks, p.want, ctx.Err())
	}
}
