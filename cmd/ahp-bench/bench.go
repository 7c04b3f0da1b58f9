package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Config selects what Run measures.
type Config struct {
	Bin         string        // the ahp-bridge binary (serve and demo-agent)
	Agent       string        // the binary whose demo-agent the bridges serve (default Bin)
	Chunks      int           // chunks per flood for direct / 1 / 10 clients
	FanoutN     int           // chunks per flood with 100 clients on one session
	SessionsN   int           // chunks per session with 100 sessions
	Size        int           // bytes per chunk
	ToolEvery   int           // tool-call variant: a tool call after every ToolEvery chunks
	LatencyRate int           // chunks per second for the latency scenarios
	LatencyN    int           // chunks per latency scenario
	LongN       int           // chunks of the long response
	LongSize    int           // bytes per chunk of the long response
	FanoutSize  int           // clients on one session (scenario 4)
	Sessions    int           // parallel sessions (scenario 5)
	Idle        int           // idle sessions and idle clients (scenario 6)
	StartupRuns int           // start-up samples (scenario 7)
	SlowFor     time.Duration // length of the endless stream (scenario 8)
	Only        []string      // run only these scenarios (all when empty)
	// Protocols are the AHP versions the probes speak (default 1.0.0, the host's own). Each
	// bridged flow runs once per protocol, in this order; memory, start-up
	// and slow-client use the first.
	Protocols []string
	// Repeat runs every flow scenario (direct included) this many times,
	// the protocols interleaved within each round; the summary gives the
	// min and median.
	Repeat  int
	Timeout time.Duration
	// StateNone runs the bridges with --state none (sessions in memory);
	// by default each keeps them in a state file of its own, as serve does.
	StateNone bool

	// The scale scenario (scale.go): one flow per session count in ScaleN,
	// each session streaming ScaleRate chunks a second of ScaleMinSize to
	// ScaleMaxSize bytes for ScaleFor, a tool call every ScaleToolFor and
	// every ScalePermEvery-th of them asking for a confirmation, with 1 to
	// ScaleClients clients. NoPin leaves the processes on every CPU.
	ScaleN                       []int
	ScaleFor, ScaleToolFor       time.Duration
	ScaleRate                    int
	ScaleMinSize, ScaleMaxSize   int
	ScalePermEvery, ScaleClients int
	NoPin                        bool
	// ScaleProfile, when set, runs the scale bridges with --ops-listen
	// and --pprof and writes a CPU profile of the middle of each stream
	// and a heap profile after it into this directory
	// (scale-N-cpu.pprof, scale-N-heap.pprof).
	ScaleProfile string
}

func (c *Config) defaults() {
	if c.Chunks <= 0 {
		c.Chunks = 100000
	}
	if c.FanoutN <= 0 {
		c.FanoutN = max(c.Chunks/10, 100)
	}
	if c.SessionsN <= 0 {
		c.SessionsN = max(c.Chunks/100, 100)
	}
	if c.Size <= 0 {
		c.Size = 64
	}
	if c.ToolEvery <= 0 {
		c.ToolEvery = 50
	}
	if c.LatencyRate <= 0 {
		c.LatencyRate = 1000
	}
	if c.LatencyN <= 0 {
		c.LatencyN = 3000
	}
	if c.LongN <= 0 {
		c.LongN = 50000
	}
	if c.LongSize <= 0 {
		c.LongSize = 1024
	}
	if c.FanoutSize <= 0 {
		c.FanoutSize = 100
	}
	if c.Sessions <= 0 {
		c.Sessions = 100
	}
	if c.Idle <= 0 {
		c.Idle = 1000
	}
	if c.StartupRuns <= 0 {
		c.StartupRuns = 10
	}
	if c.SlowFor <= 0 {
		c.SlowFor = 10 * time.Second
	}
	if c.Timeout <= 0 {
		c.Timeout = 5 * time.Minute
	}
	if len(c.Protocols) == 0 {
		c.Protocols = []string{v100}
	}
	if c.Repeat <= 0 {
		c.Repeat = 1
	}
	c.scaleDefaults()
}

// Flow is one streaming scenario's figures.
type Flow struct {
	Name string `json:"name"`
	// Protocol is the AHP version the clients spoke ("" for the direct
	// floors, which have no AHP client); Run counts from 1 when repeated.
	Protocol  string `json:"protocol,omitempty"`
	Run       int    `json:"run,omitempty"`
	Sessions  int    `json:"sessions"`
	Clients   int    `json:"clientsPerSession"`
	Chunks    int    `json:"chunksPerSession"`
	Size      int    `json:"chunkBytes"`
	Rate      int    `json:"paceChunksPerSec,omitempty"` // 0: unpaced
	ToolEvery int    `json:"toolCallEvery,omitempty"`
	// Seconds runs from the agent's write of the first chunk to the last
	// client's read of the last chunk.
	Seconds float64 `json:"seconds"`
	// ChunksPerSec and MBPerSec are per session stream (payload bytes);
	// AggregateChunksPerSec counts every session's chunks.
	ChunksPerSec          float64 `json:"chunksPerSec"`
	MBPerSec              float64 `json:"mbPerSec"`
	AggregateChunksPerSec float64 `json:"aggregateChunksPerSec"`
	// LightClients is how many of the clients were light probes (they
	// count frames to the last chunk but not the chunks, see bridged).
	LightClients int `json:"lightClients,omitempty"`
	// Deliveries is chunks × (clients − light ones) × sessions received in
	// all.
	Deliveries int64 `json:"deliveries"`
	// ActionFrames is the action frames the clients received in all (the
	// chunks coalesce into fewer frames when the bridge is behind).
	ActionFrames int64   `json:"actionFrames"`
	P50Micros    float64 `json:"p50Micros"`
	P99Micros    float64 `json:"p99Micros"`
	MaxMicros    float64 `json:"maxMicros"`
	// CPUSeconds and PeakRSSMiB are the bridge process's (for "direct",
	// the bench process's own ACP client); AgentCPUSeconds the agent's.
	CPUSeconds      float64 `json:"cpuSeconds"`
	AgentCPUSeconds float64 `json:"agentCpuSeconds"`
	PeakRSSMiB      float64 `json:"peakRssMiB"`
	Misordered      int     `json:"misordered"`
	// Corrupt counts chunks whose text was not exactly the agent's (the
	// full probes check it; the direct floors do not).
	Corrupt int `json:"corrupt"`
	// RSSBeforeMiB is the bridge's resident set just before the turn, and
	// PeakGrowthPerText the growth of its peak over that, as a multiple of
	// the chunks' text (long-response only).
	RSSBeforeMiB      float64 `json:"rssBeforeMiB,omitempty"`
	PeakGrowthPerText float64 `json:"peakGrowthPerText,omitempty"`

	// The scale scenario's figures (scale.go). Chunks are MinSize to Size
	// bytes; TotalClients is the clients of every session, all full
	// probes; FramesPerSec and BytesPerSec count every frame they read;
	// CPUPercent is the bridge's CPU time over the flow's seconds, in
	// percent of one core, and CPUPerFrameMicros and CPUPerDeliveryMicros
	// divide it by the frames and by the chunks the clients received;
	// RSSMiB is the bridge's resident set at the end, StreamRSSMiB its
	// largest while the sessions streamed (sampled every 250 ms until the
	// first client had its last chunk: the turns' ends, all at once, are in
	// PeakRSSMiB). SeqErrors counts
	// action frames whose serverSeq did not increase on their channel,
	// Approvals the confirmations the clients sent; Pinning says which
	// CPUs the bridge and the rest ran on.
	MinSize              int     `json:"minChunkBytes,omitempty"`
	PermEvery            int     `json:"permissionEvery,omitempty"`
	TotalClients         int     `json:"clients,omitempty"`
	FramesPerSec         float64 `json:"framesPerSec,omitempty"`
	BytesPerSec          float64 `json:"bytesPerSec,omitempty"`
	CPUPercent           float64 `json:"cpuPercent,omitempty"`
	CPUPerFrameMicros    float64 `json:"cpuMicrosPerFrame,omitempty"`
	CPUPerDeliveryMicros float64 `json:"cpuMicrosPerDelivery,omitempty"`
	RSSMiB               float64 `json:"rssMiB,omitempty"`
	StreamRSSMiB         float64 `json:"streamRssMiB,omitempty"`
	SeqErrors            int     `json:"serverSeqErrors"`
	Approvals            int     `json:"approvals,omitempty"`
	Pinning              string  `json:"pinning,omitempty"`

	// Profiles are the files of the bridge's profiles written
	// (Config.ScaleProfile).
	Profiles []string `json:"profiles,omitempty"`
}

// Memory is scenario 6.
type Memory struct {
	Sessions        int     `json:"sessions"`
	Clients         int     `json:"clients"`
	BaseRSSKiB      float64 `json:"baseRssKiB"`
	WithSessionsKiB float64 `json:"withSessionsRssKiB"`
	WithClientsKiB  float64 `json:"withClientsRssKiB"`
	PerSessionKiB   float64 `json:"perIdleSessionKiB"`
	PerClientKiB    float64 `json:"perIdleClientKiB"`
}

// Startup is scenario 7.
type Startup struct {
	Runs     int     `json:"runs"`
	MinMs    float64 `json:"minMs"`
	MedianMs float64 `json:"medianMs"`
	MaxMs    float64 `json:"maxMs"`
}

// Machine describes where the figures were measured.
type Machine struct {
	Cores     int    `json:"cores"`
	CPUModel  string `json:"cpuModel"`
	GoVersion string `json:"goVersion"`
	OS        string `json:"os"`
	// LoadBefore and LoadAfter are /proc/loadavg (1, 5, 15 minutes) when
	// the run started and ended: other work on the machine skews figures.
	LoadBefore string `json:"loadBefore"`
	LoadAfter  string `json:"loadAfter"`
}

// Report is everything one Run measured.
type Report struct {
	Started time.Time `json:"started"`
	Command string    `json:"command"`
	Machine Machine   `json:"machine"`
	// Protocols are the AHP versions the probes spoke, the first one also
	// in memory, start-up and slow-client.
	Protocols []string `json:"protocols"`
	Flows     []Flow   `json:"flows"`
	// Summary has one entry per flow scenario and protocol: the figures
	// over its runs.
	Summary []Summary   `json:"summary"`
	Memory  *Memory     `json:"memory,omitempty"`
	Startup *Startup    `json:"startup,omitempty"`
	Slow    *SlowClient `json:"slowClient,omitempty"`
}

// Summary is one flow scenario's figures for one protocol over its runs.
type Summary struct {
	Name     string `json:"name"`
	Protocol string `json:"protocol,omitempty"`
	Runs     int    `json:"runs"`
	// Chunks per second per session stream.
	MinChunksPerSec    float64 `json:"minChunksPerSec"`
	MedianChunksPerSec float64 `json:"medianChunksPerSec"`
	MaxChunksPerSec    float64 `json:"maxChunksPerSec"`
	// The medians over the runs of each run's p50 and p99 latency, and of
	// the bridge's CPU seconds.
	MedianP50Micros  float64 `json:"medianP50Micros"`
	MedianP99Micros  float64 `json:"medianP99Micros"`
	MedianCPUSeconds float64 `json:"medianCpuSeconds"`
}

// Flow returns the first run of the named flow with the first protocol
// (or the direct floor), or nil.
func (r *Report) Flow(name string) *Flow {
	for i := range r.Flows {
		if f := &r.Flows[i]; f.Name == name && (f.Protocol == "" || len(r.Protocols) == 0 || f.Protocol == r.Protocols[0]) {
			return f
		}
	}
	return nil
}

// Sum returns the summary of the named flow with the given protocol (""
// for the direct floors), or nil.
func (r *Report) Sum(name, protocol string) *Summary {
	for i := range r.Summary {
		if s := &r.Summary[i]; s.Name == name && s.Protocol == protocol {
			return s
		}
	}
	return nil
}

// summarizeRuns fills r.Summary from r.Flows, in the order the flows first
// ran.
func (r *Report) summarizeRuns() {
	r.Summary = nil
	type key struct{ name, proto string }
	var order []key
	runs := map[key][]Flow{}
	for _, f := range r.Flows {
		k := key{f.Name, f.Protocol}
		if _, ok := runs[k]; !ok {
			order = append(order, k)
		}
		runs[k] = append(runs[k], f)
	}
	median := func(fs []Flow, v func(Flow) float64) float64 {
		xs := make([]float64, len(fs))
		for i, f := range fs {
			xs[i] = v(f)
		}
		slices.Sort(xs)
		if n := len(xs); n%2 == 0 {
			return (xs[n/2-1] + xs[n/2]) / 2
		}
		return xs[len(xs)/2]
	}
	for _, k := range order {
		fs := runs[k]
		s := Summary{Name: k.name, Protocol: k.proto, Runs: len(fs),
			MinChunksPerSec: fs[0].ChunksPerSec, MaxChunksPerSec: fs[0].ChunksPerSec,
			MedianChunksPerSec: median(fs, func(f Flow) float64 { return f.ChunksPerSec }),
			MedianP50Micros:    median(fs, func(f Flow) float64 { return f.P50Micros }),
			MedianP99Micros:    median(fs, func(f Flow) float64 { return f.P99Micros }),
			MedianCPUSeconds:   median(fs, func(f Flow) float64 { return f.CPUSeconds }),
		}
		for _, f := range fs {
			s.MinChunksPerSec = min(s.MinChunksPerSec, f.ChunksPerSec)
			s.MaxChunksPerSec = max(s.MaxChunksPerSec, f.ChunksPerSec)
		}
		r.Summary = append(r.Summary, s)
	}
}

// Scenario names, in the order they run.
const (
	scDirect     = "direct"
	scDirectSDK  = "direct-sdk"
	scBridge1    = "bridge-1"
	scBridge1T   = "bridge-1-tools"
	scBridge10   = "bridge-10"
	scFanout     = "bridge-100"
	scBridge10F  = "bridge-10-full"
	scFanoutF    = "bridge-100-full"
	scSessions   = "sessions-100x1"
	scLatDirect  = "latency-direct"
	scLatBridge1 = "latency-1"
	scLat10      = "latency-10"
	scLong       = "long-response"
	scMemory     = "memory"
	scStartup    = "startup"
	scSlow       = "slow-client"
	scPipe       = "pipe"
)

// AllScenarios lists every scenario name.
var AllScenarios = []string{scPipe, scDirect, scDirectSDK, scBridge1, scBridge1T, scBridge10, scFanout, scBridge10F, scFanoutF, scSessions,
	scLatDirect, scLatBridge1, scLat10, scLong, scScale, scMemory, scStartup, scSlow}

// Run measures the selected scenarios. progress, if not nil, receives a
// line as each scenario ends.
func Run(ctx context.Context, cfg Config, progress func(string)) (*Report, error) {
	cfg.defaults()
	if progress == nil {
		progress = func(string) {}
	}
	for _, s := range cfg.Only {
		if !slices.Contains(AllScenarios, s) {
			return nil, fmt.Errorf("unknown scenario %q (known: %s)", s, strings.Join(AllScenarios, ", "))
		}
	}
	for _, p := range cfg.Protocols {
		if !slices.Contains(protocols, p) {
			return nil, fmt.Errorf("unknown protocol %q (the probes speak %s)", p, strings.Join(protocols, ", "))
		}
	}
	want := func(s string) bool { return len(cfg.Only) == 0 || slices.Contains(cfg.Only, s) }
	rep := &Report{Started: time.Now().UTC(), Machine: machine(), Protocols: cfg.Protocols}
	defer func() { rep.Machine.LoadAfter = loadAvg(); rep.summarizeRuns() }()
	proto0 := cfg.Protocols[0]
	flow := func(name, proto string, run int, f func() (Flow, error)) error {
		fl, err := f()
		if err != nil {
			if proto != "" {
				return fmt.Errorf("scenario %s (AHP %s): %w", name, proto, err)
			}
			return fmt.Errorf("scenario %s: %w", name, err)
		}
		fl.Name, fl.Protocol = name, proto
		if cfg.Repeat > 1 {
			fl.Run = run
		}
		rep.Flows = append(rep.Flows, fl)
		label := name
		if proto != "" {
			label += " " + proto
		}
		if cfg.Repeat > 1 {
			label += fmt.Sprintf(" #%d", run)
		}
		progress(fmt.Sprintf("%-22s %10.0f chunks/s  p50 %8.0fµs  p99 %8.0fµs", label, fl.ChunksPerSec, fl.P50Micros, fl.P99Micros))
		return nil
	}
	// A bridged step measures the probes' protocol; a direct one has none.
	steps := []struct {
		name    string
		bridged bool
		f       func(proto string) (Flow, error)
	}{
		{scPipe, false, func(string) (Flow, error) { return pipe(ctx, cfg) }},
		{scDirect, false, func(string) (Flow, error) { return direct(ctx, cfg, cfg.Chunks, 0, false) }},
		{scDirectSDK, false, func(string) (Flow, error) { return direct(ctx, cfg, cfg.Chunks, 0, true) }},
		{scBridge1, true, func(p string) (Flow, error) { return bridged(ctx, cfg, p, 1, 1, cfg.Chunks, 0, 0) }},
		{scBridge1T, true, func(p string) (Flow, error) { return bridged(ctx, cfg, p, 1, 1, cfg.Chunks, 0, cfg.ToolEvery) }},
		{scBridge10, true, func(p string) (Flow, error) { return bridged(ctx, cfg, p, 1, 10, cfg.Chunks, 0, 0) }},
		{scFanout, true, func(p string) (Flow, error) { return bridged(ctx, cfg, p, 1, cfg.FanoutSize, cfg.FanoutN, 0, 0) }},
		{scBridge10F, true, func(p string) (Flow, error) { return bridgedFull(ctx, cfg, p, 1, 10, cfg.Chunks) }},
		{scFanoutF, true, func(p string) (Flow, error) { return bridgedFull(ctx, cfg, p, 1, cfg.FanoutSize, cfg.FanoutN) }},
		{scSessions, true, func(p string) (Flow, error) { return bridged(ctx, cfg, p, cfg.Sessions, 1, cfg.SessionsN, 0, 0) }},
		{scLatDirect, false, func(string) (Flow, error) { return direct(ctx, cfg, cfg.LatencyN, cfg.LatencyRate, true) }},
		{scLatBridge1, true, func(p string) (Flow, error) { return bridged(ctx, cfg, p, 1, 1, cfg.LatencyN, cfg.LatencyRate, 0) }},
		{scLat10, true, func(p string) (Flow, error) { return bridged(ctx, cfg, p, 1, 10, cfg.LatencyN, cfg.LatencyRate, 0) }},
		{scLong, true, func(p string) (Flow, error) { return longResponse(ctx, cfg, p) }},
	}
	// Round by round, so that a drift in the machine's load over the run
	// affects every scenario and protocol alike; the protocols take turns
	// to go first, so that neither always follows the same scenario, and
	// each flow starts with the bench process's garbage collected.
	for run := 1; run <= cfg.Repeat; run++ {
		for _, s := range steps {
			if !want(s.name) {
				continue
			}
			protos := []string{""}
			if s.bridged {
				k := (run - 1) % len(cfg.Protocols)
				protos = append(slices.Clone(cfg.Protocols[k:]), cfg.Protocols[:k]...)
			}
			for _, p := range protos {
				runtime.GC()
				if err := flow(s.name, p, run, func() (Flow, error) { return s.f(p) }); err != nil {
					return rep, err
				}
			}
		}
		if want(scScale) {
			for _, n := range cfg.ScaleN {
				runtime.GC()
				if err := flow(fmt.Sprintf("%s-%d", scScale, n), proto0, run, func() (Flow, error) { return scale(ctx, cfg, proto0, n) }); err != nil {
					return rep, err
				}
			}
		}
	}
	if want(scMemory) {
		m, err := idleMemory(ctx, cfg, proto0)
		if err != nil {
			return rep, fmt.Errorf("scenario %s: %w", scMemory, err)
		}
		rep.Memory = m
		progress(fmt.Sprintf("%-15s %.1f KiB/session  %.1f KiB/client", scMemory, m.PerSessionKiB, m.PerClientKiB))
	}
	if want(scStartup) {
		s, err := startup(ctx, cfg)
		if err != nil {
			return rep, fmt.Errorf("scenario %s: %w", scStartup, err)
		}
		rep.Startup = s
		progress(fmt.Sprintf("%-15s median %.1f ms", scStartup, s.MedianMs))
	}
	if want(scSlow) {
		s, err := slowClient(ctx, cfg, proto0, cfg.SlowFor)
		if err != nil {
			return rep, fmt.Errorf("scenario %s: %w", scSlow, err)
		}
		rep.Slow = s
		progress(fmt.Sprintf("%-15s dropped %v, peak %.1f MiB (%.1f MiB without the stalled client)", scSlow,
			s.WithStalled.SlowDropped, s.WithStalled.PeakRSSMiB, s.WithoutStalled.PeakRSSMiB))
	}
	return rep, nil
}

func benchPrompt(n, size, rate, toolEvery int) string {
	return fmt.Sprintf("bench %d %d %d %d", n, size, rate, toolEvery)
}

// direct is the floor: the agent read with no bridge. Unpaced, sdkTyped
// chooses between the raw read (plain structs) and the acp-go-sdk-typed
// one; paced, it is acp-go-sdk's own ClientSideConnection.
func direct(ctx context.Context, cfg Config, n, rate int, sdkTyped bool) (Flow, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	run := runDirect // the acp-go-sdk connection, when paced
	if rate == 0 {
		// See there: the SDK connection drops an unpaced flood.
		run = func(ctx context.Context, bin, prompt string, want int) (*counter, procUsage, time.Duration, error) {
			return runDirectLines(ctx, bin, prompt, want, sdkTyped)
		}
	}
	c, usage, agentCPU, err := run(ctx, cfg.Bin, benchPrompt(n, cfg.Size, rate, 0), n)
	if err != nil {
		return Flow{}, err
	}
	f := summarize([]*counter{c}, 1, 1, n, cfg.Size, rate, 0)
	f.CPUSeconds = usage.CPU.Seconds()
	f.AgentCPUSeconds = agentCPU.Seconds()
	f.PeakRSSMiB = float64(usage.PeakRSS) / (1 << 20)
	return f, nil
}

// longResponse is one long answer (LongN chunks of LongSize bytes, 51 MB
// by default) read by one client: the bridge's peak resident set over the
// turn, less its resident set before it, as a multiple of the answer's
// text.
func longResponse(ctx context.Context, cfg Config, proto string) (Flow, error) {
	var rss int64
	f, err := bridgedWith(ctx, cfg, proto, 1, 1, cfg.LongN, cfg.LongSize, 0, 0, false, func(u procUsage) { rss = u.RSS })
	if err != nil {
		return f, err
	}
	text := float64(cfg.LongN) * float64(cfg.LongSize)
	f.RSSBeforeMiB = float64(rss) / (1 << 20)
	f.PeakGrowthPerText = (f.PeakRSSMiB*(1<<20) - float64(rss)) / text
	return f, nil
}

// bridged runs sessions floods through a fresh bridge process, each read
// by clients probes speaking proto (the first of which also creates the
// session and starts the turn).
//
// In an unpaced flow, every session's first client (the one that started
// the turn) reads every chunk's stamp, checking that each arrives once and
// in order, and gives the latency; the others are light probes, which only
// count action frames until the last chunk. The fan-out figure is the
// bridge's capacity to serve N subscribers; all the probes share this
// process and the bridge's cores, so probes that each parse every stamp
// would measure mostly themselves (bridgedFull measures that).
func bridged(ctx context.Context, cfg Config, proto string, sessions, clients, n, rate, toolEvery int) (Flow, error) {
	return bridgedWith(ctx, cfg, proto, sessions, clients, n, cfg.Size, rate, toolEvery, rate == 0, nil)
}

// bridgedFull is the unpaced bridged flow in which every client reads
// every chunk's stamp (the fan-out scenarios before issue 17's second
// pass): what N such readers in one process get, readers included.
func bridgedFull(ctx context.Context, cfg Config, proto string, sessions, clients, n int) (Flow, error) {
	return bridgedWith(ctx, cfg, proto, sessions, clients, n, cfg.Size, 0, 0, false, nil)
}

// bridgedWith is bridged with chunks of size bytes, light probes beside
// each session's first client or not, and before (if not nil) told the
// bridge's usage just before the turns start.
func bridgedWith(ctx context.Context, cfg Config, proto string, sessions, clients, n, size, rate, toolEvery int, light bool, before func(procUsage)) (Flow, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	bp, err := startBridge(ctx, cfg, "--max-sessions", strconv.Itoa(sessions+1))
	if err != nil {
		return Flow{}, err
	}
	defer bp.stop()
	var probes []*probe
	defer func() {
		for _, p := range probes {
			p.close()
		}
	}()
	type sess struct {
		turns string // where the session's turns stream: its default chat, or itself in 0.3.0
		ctl   *probe
	}
	ss := make([]sess, sessions)
	for i := range ss {
		ch := fmt.Sprintf("ahp-session:/00000000-0000-4000-8000-%012d", i)
		ctl, err := dialProbe(ctx, bp.URL, n, proto, false, size)
		if err != nil {
			return Flow{}, err
		}
		probes = append(probes, ctl)
		if err := ctl.initialize(ctx, fmt.Sprintf("bench-%d-0", i)); err != nil {
			return Flow{}, err
		}
		turns, err := ctl.createSession(ctx, ch)
		if err != nil {
			return Flow{}, fmt.Errorf("%w; the bridge's log ends with: %s", err, bp.stderr.String())
		}
		ss[i] = sess{turns: turns, ctl: ctl}
		for j := 1; j < clients; j++ {
			p, err := dialProbe(ctx, bp.URL, n, proto, light, size)
			if err != nil {
				return Flow{}, err
			}
			probes = append(probes, p)
			if err := p.initialize(ctx, fmt.Sprintf("bench-%d-%d", i, j), ch, turns); err != nil {
				return Flow{}, err
			}
		}
	}
	runtime.GC() // the bench's own heap, not the bridge's: keep its collections out of the flow
	usageBefore, agentBefore, err := bp.usage()
	if err != nil {
		return Flow{}, err
	}
	if before != nil {
		before(usageBefore)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(ss))
	for i, s := range ss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.ctl.startTurn(s.turns, fmt.Sprintf("00000000-0000-4000-9000-%012d", i), benchPrompt(n, size, rate, toolEvery))
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return Flow{}, err
	}
	for _, p := range probes {
		if err := p.waitFull(ctx); err != nil {
			return Flow{}, fmt.Errorf("%w; the bridge's log ends with: %s", err, bp.stderr.String())
		}
	}
	after, agentAfter, err := bp.usage()
	if err != nil {
		return Flow{}, err
	}
	counters := make([]*counter, len(probes))
	for i, p := range probes {
		counters[i] = &p.counter
	}
	f := summarize(counters, sessions, clients, n, size, rate, toolEvery)
	if light {
		f.LightClients = sessions * (clients - 1)
	}
	f.CPUSeconds = (after.CPU - usageBefore.CPU).Seconds()
	f.AgentCPUSeconds = (agentAfter - agentBefore).Seconds()
	f.PeakRSSMiB = float64(after.PeakRSS) / (1 << 20)
	return f, nil
}

// summarize merges the readers' figures.
func summarize(cs []*counter, sessions, clients, n, size, rate, toolEvery int) Flow {
	f := Flow{Sessions: sessions, Clients: clients, Chunks: n, Size: size, Rate: rate, ToolEvery: toolEvery}
	all := newHist()
	var first int64
	var last time.Time
	for _, c := range cs {
		all.merge(c.lat)
		if first == 0 || (c.firstAt != 0 && c.firstAt < first) {
			first = c.firstAt
		}
		if c.lastAt.After(last) {
			last = c.lastAt
		}
		f.Misordered += c.misorder
		f.Corrupt += c.corrupt
		f.Deliveries += int64(c.chunks)
		f.ActionFrames += int64(c.actions)
	}
	f.Seconds = last.Sub(time.Unix(0, first)).Seconds()
	if f.Seconds > 0 {
		f.ChunksPerSec = float64(n) / f.Seconds
		f.MBPerSec = float64(n) * float64(size) / f.Seconds / 1e6
		f.AggregateChunksPerSec = float64(n) * float64(sessions) / f.Seconds
	}
	f.P50Micros = micros(all.quantile(0.50))
	f.P99Micros = micros(all.quantile(0.99))
	f.MaxMicros = micros(all.max)
	return f
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// idleMemory is scenario 6: the bridge's RSS growth per idle session and
// per idle connected client, the clients speaking proto.
func idleMemory(ctx context.Context, cfg Config, proto string) (*Memory, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	bp, err := startBridge(ctx, cfg, "--max-sessions", strconv.Itoa(cfg.Idle+1))
	if err != nil {
		return nil, err
	}
	defer bp.stop()
	ctl, err := dialProbe(ctx, bp.URL, 0, proto, false, 0)
	if err != nil {
		return nil, err
	}
	defer ctl.close()
	if err := ctl.initialize(ctx, "bench-memory"); err != nil {
		return nil, err
	}
	// Start the agent process first, so that it is not counted.
	if err := ctl.idleSession(ctx, "ahp-session:/00000000-0000-4000-8000-ffffffffffff"); err != nil {
		return nil, err
	}
	base, err := settledRSS(ctx, bp.pid())
	if err != nil {
		return nil, err
	}
	for i := 0; i < cfg.Idle; i++ {
		if err := ctl.idleSession(ctx, fmt.Sprintf("ahp-session:/00000000-0000-4000-8000-%012d", i)); err != nil {
			return nil, err
		}
	}
	withSessions, err := settledRSS(ctx, bp.pid())
	if err != nil {
		return nil, err
	}
	probes := make([]*probe, 0, cfg.Idle)
	defer func() {
		for _, p := range probes {
			p.close()
		}
	}()
	for i := 0; i < cfg.Idle; i++ {
		p, err := dialProbe(ctx, bp.URL, 0, proto, false, 0)
		if err != nil {
			return nil, err
		}
		probes = append(probes, p)
		if err := p.initialize(ctx, fmt.Sprintf("bench-idle-%d", i), "ahp-root://"); err != nil {
			return nil, err
		}
	}
	withClients, err := settledRSS(ctx, bp.pid())
	if err != nil {
		return nil, err
	}
	kib := func(b int64) float64 { return float64(b) / 1024 }
	return &Memory{
		Sessions: cfg.Idle, Clients: cfg.Idle,
		BaseRSSKiB: kib(base), WithSessionsKiB: kib(withSessions), WithClientsKiB: kib(withClients),
		PerSessionKiB: kib(withSessions-base) / float64(cfg.Idle),
		PerClientKiB:  kib(withClients-withSessions) / float64(cfg.Idle),
	}, nil
}

// settledRSS waits for the bridge's resident set to stop changing (for at
// most 3 s) and returns it.
func settledRSS(ctx context.Context, pid int) (int64, error) {
	var last int64 = -1
	for i := 0; i < 30; i++ {
		u, err := readProc(pid)
		if err != nil {
			return 0, err
		}
		if u.RSS == last {
			return u.RSS, nil
		}
		last = u.RSS
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	return last, nil
}

// startup is scenario 7: exec to READY line.
func startup(ctx context.Context, cfg Config) (*Startup, error) {
	var ds []time.Duration
	for i := 0; i < cfg.StartupRuns; i++ {
		bp, err := startBridge(ctx, cfg)
		if err != nil {
			return nil, err
		}
		ds = append(ds, bp.Startup)
		bp.stop()
	}
	slices.Sort(ds)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return &Startup{Runs: len(ds), MinMs: ms(ds[0]), MedianMs: ms(ds[len(ds)/2]), MaxMs: ms(ds[len(ds)-1])}, nil
}

// loadAvg returns the three load averages from /proc/loadavg.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// machine describes this computer from /proc/cpuinfo.
func machine() Machine {
	m := Machine{Cores: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH, LoadBefore: loadAvg()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}
