package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"time"
)

// scScale is the scale scenario (issue 28): many busy sessions on one
// bridge, one flow per session count (Config.ScaleN), each named
// "scale-N".
const scScale = "scale"

// scaleDefaults fills the scale scenario's knobs.
func (c *Config) scaleDefaults() {
	if len(c.ScaleN) == 0 {
		c.ScaleN = []int{10, 100, 500}
	}
	if c.ScaleFor <= 0 {
		c.ScaleFor = 30 * time.Second
	}
	if c.ScaleRate <= 0 {
		c.ScaleRate = 50
	}
	if c.ScaleMinSize <= 0 {
		c.ScaleMinSize = 20
	}
	if c.ScaleMaxSize < c.ScaleMinSize {
		c.ScaleMaxSize = max(200, c.ScaleMinSize)
	}
	if c.ScaleToolFor <= 0 {
		c.ScaleToolFor = 2 * time.Second
	}
	if c.ScalePermEvery <= 0 {
		c.ScalePermEvery = 5
	}
	if c.ScaleClients <= 0 {
		c.ScaleClients = 3
	}
}

// scale runs n sessions on one fresh bridge, all of them sessions of the
// one flood agent process, each streaming ScaleRate chunks a second of
// ScaleMinSize to ScaleMaxSize bytes for ScaleFor, with a tool call every
// ScaleToolFor of which every ScalePermEvery-th asks for a confirmation
// that the session's first client answers. Session i has 1 + i%ScaleClients
// clients, every one of them a full probe: it checks each chunk's exact
// text and order and that serverSeq increases on each channel. Where this
// process may run on two CPUs or more, the bridge is pinned to the first
// and the agent and the clients to the others (Flow.Pinning says what was
// done).
func scale(ctx context.Context, cfg Config, proto string, n int) (Flow, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout+2*cfg.ScaleFor)
	defer cancel()
	chunks := max(int(cfg.ScaleFor.Seconds()*float64(cfg.ScaleRate)), 1)
	toolEvery := int(cfg.ScaleToolFor.Seconds() * float64(cfg.ScaleRate))
	extra := []string{"--max-sessions", strconv.Itoa(n + 1)}
	var opsAddr string
	if cfg.ScaleProfile != "" {
		addr, err := freeLoopbackAddr()
		if err != nil {
			return Flow{}, err
		}
		opsAddr = addr
		extra = append(extra, "--ops-listen", opsAddr, "--pprof")
	}
	bp, err := startBridge(ctx, cfg, extra...)
	if err != nil {
		return Flow{}, err
	}
	defer bp.stop()

	// The bridge on one CPU, the agent (its child, pinned once started)
	// and this process's clients on the others.
	cpus := allowedCPUs()
	pinning := ""
	var rest []int
	if cfg.NoPin {
		pinning = "not pinned (-no-pin)"
	} else if len(cpus) < 2 {
		pinning = fmt.Sprintf("not pinned: this process may run on %d CPU(s)", len(cpus))
	} else if err := pinProcess(bp.pid(), cpus[:1]); err != nil {
		pinning = "not pinned: " + err.Error()
	} else {
		rest = cpus[1:]
		if err := pinProcess(0, rest); err != nil {
			pinning = "bridge pinned, clients not: " + err.Error()
			rest = nil
		}
		defer func() { _ = pinProcess(0, cpus) }() // the other scenarios run unpinned
	}

	var probes []*probe
	defer func() {
		for _, p := range probes {
			p.close()
		}
	}()
	type sess struct {
		turns string
		ctl   *probe
	}
	ss := make([]sess, n)
	clients := 0
	full := func(p *probe) {
		p.minSize, p.maxSize, p.checkSeq = cfg.ScaleMinSize, cfg.ScaleMaxSize, true
		probes = append(probes, p)
		clients++
	}
	for i := range ss {
		ch := fmt.Sprintf("ahp-session:/00000000-0000-4000-8000-%012d", i)
		ctl, err := dialProbe(ctx, bp.URL, chunks, proto, false, 0)
		if err != nil {
			return Flow{}, err
		}
		full(ctl)
		ctl.approver = true
		if err := ctl.initialize(ctx, fmt.Sprintf("scale-%d-0", i)); err != nil {
			return Flow{}, err
		}
		turns, err := ctl.createSession(ctx, ch)
		if err != nil {
			return Flow{}, fmt.Errorf("%w; the bridge's log ends with: %s", err, bp.stderr.String())
		}
		ss[i] = sess{turns: turns, ctl: ctl}
		for j := 1; j < 1+i%cfg.ScaleClients; j++ {
			p, err := dialProbe(ctx, bp.URL, chunks, proto, false, 0)
			if err != nil {
				return Flow{}, err
			}
			full(p)
			if err := p.initialize(ctx, fmt.Sprintf("scale-%d-%d", i, j), ch, turns); err != nil {
				return Flow{}, err
			}
		}
	}
	if rest != nil {
		pinning = fmt.Sprintf("bridge on CPU %d; agent and clients on CPUs %v", cpus[0], rest)
		for _, c := range childPIDs(bp.pid()) {
			if err := pinProcess(c, rest); err != nil {
				pinning = fmt.Sprintf("bridge on CPU %d, clients on CPUs %v; agent not pinned: %v", cpus[0], rest, err)
			}
		}
	}
	runtime.GC()
	before, agentBefore, err := bp.usage()
	if err != nil {
		return Flow{}, err
	}
	// The turns start spread over one chunk interval, so that the
	// sessions' chunks do not all fall in the same instant.
	prompt := fmt.Sprintf("bench %d %d %d %d %d %d", chunks, cfg.ScaleMinSize, cfg.ScaleRate, toolEvery, cfg.ScalePermEvery, cfg.ScaleMaxSize)
	interval := time.Second / time.Duration(cfg.ScaleRate)
	start := time.Now()
	for i, s := range ss {
		if d := time.Until(start.Add(interval * time.Duration(i) / time.Duration(n))); d > 0 {
			time.Sleep(d)
		}
		if err := s.ctl.startTurn(s.turns, fmt.Sprintf("00000000-0000-4000-9000-%012d", i), prompt); err != nil {
			return Flow{}, err
		}
	}
	// The profiles: CPU over the middle half of the stream, the heap after
	// it (the stream's live heap, the turns not yet ended).
	profiled := make(chan profileResult, 1)
	if opsAddr != "" {
		go func() {
			profiled <- takeProfiles(ctx, opsAddr, cfg.ScaleProfile, fmt.Sprintf("scale-%d", n), cfg.ScaleFor/4, cfg.ScaleFor/2)
		}()
	} else {
		profiled <- profileResult{}
	}
	// The bridge's resident set while the sessions stream: sampled every
	// 250 ms until the first client has its last chunk (the turns then
	// end, all at once, which the peak includes).
	var streamRSS int64
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			if u, err := readProc(bp.pid()); err == nil {
				streamRSS = max(streamRSS, u.RSS)
			}
			for _, p := range probes {
				select {
				case <-p.full:
					return
				default:
				}
			}
			select {
			case <-tick.C:
			case <-ctx.Done():
				return
			}
		}
	}()
	for _, p := range probes {
		if err := p.waitFull(ctx); err != nil {
			return Flow{}, fmt.Errorf("%w; the bridge's log ends with: %s", err, bp.stderr.String())
		}
	}
	<-sampled
	after, agentAfter, err := bp.usage()
	if err != nil {
		return Flow{}, err
	}
	prof := <-profiled
	if prof.err != nil {
		return Flow{}, prof.err
	}
	counters := make([]*counter, len(probes))
	for i, p := range probes {
		counters[i] = &p.counter
	}
	f := summarize(counters, n, 0, chunks, cfg.ScaleMaxSize, cfg.ScaleRate, toolEvery)
	f.MinSize, f.PermEvery, f.TotalClients, f.Pinning = cfg.ScaleMinSize, cfg.ScalePermEvery, clients, pinning
	f.Profiles = prof.files
	var frames, bytes int64
	for _, c := range counters {
		frames += c.frames
		bytes += c.bytes
		f.SeqErrors += c.seqErrors
		f.Approvals += c.approvals
	}
	f.CPUSeconds = (after.CPU - before.CPU).Seconds()
	f.AgentCPUSeconds = (agentAfter - agentBefore).Seconds()
	f.PeakRSSMiB = float64(after.PeakRSS) / (1 << 20)
	f.RSSMiB = float64(after.RSS) / (1 << 20)
	f.StreamRSSMiB = float64(streamRSS) / (1 << 20)
	if f.Seconds > 0 {
		f.FramesPerSec = float64(frames) / f.Seconds
		f.BytesPerSec = float64(bytes) / f.Seconds
		f.CPUPercent = 100 * f.CPUSeconds / f.Seconds
	}
	if frames > 0 {
		f.CPUPerFrameMicros = f.CPUSeconds * 1e6 / float64(frames)
	}
	if f.Deliveries > 0 {
		f.CPUPerDeliveryMicros = f.CPUSeconds * 1e6 / float64(f.Deliveries)
	}
	return f, nil
}

// printScale writes the scale flows and their growth from the smallest N to
// the largest.
func printScale(w io.Writer, r *Report) {
	var fs []Flow
	for _, f := range r.Flows {
		if f.TotalClients > 0 {
			fs = append(fs, f)
		}
	}
	if len(fs) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%-10s %4s %7s %8s %8s %8s %9s %9s %9s %10s %8s %9s %9s %9s %7s %7s\n", "scale", "run", "clients", "cpu %",
		"RSS MiB", "peak MiB", "p50 µs", "p99 µs", "max µs", "frames/s", "MB/s", "µs/frame", "µs/chunk", "approvals", "stream", "errors")
	for _, f := range fs {
		run := "-"
		if f.Run > 0 {
			run = fmt.Sprint(f.Run)
		}
		fmt.Fprintf(w, "%-10s %4s %7d %8.1f %8.1f %8.1f %9.0f %9.0f %9.0f %10.0f %8.2f %9.2f %9.2f %9d %6.1fs %7d\n", f.Name, run, f.TotalClients,
			f.CPUPercent, f.StreamRSSMiB, f.PeakRSSMiB, f.P50Micros, f.P99Micros, f.MaxMicros, f.FramesPerSec, f.BytesPerSec/1e6,
			f.CPUPerFrameMicros, f.CPUPerDeliveryMicros, f.Approvals, f.Seconds, f.Corrupt+f.Misordered+f.SeqErrors)
	}
	for _, f := range fs {
		if want := float64(f.Chunks) / float64(max(f.Rate, 1)); f.Seconds > 1.2*want+1 {
			fmt.Fprintf(w, "%s: the stream took %.1f s where its pace makes %.1f s: the readers or the agent did not keep up, so its figures are not the bridge's at that pace\n",
				f.Name, f.Seconds, want)
		}
		if n := f.Corrupt + f.Misordered + f.SeqErrors; n > 0 {
			fmt.Fprintf(w, "%s: %d chunks or frames were not exactly the agent's, in order (corrupt %d, misordered %d, serverSeq %d)\n",
				f.Name, n, f.Corrupt, f.Misordered, f.SeqErrors)
		}
	}
	fmt.Fprintf(w, "scale: %s\n", fs[0].Pinning)
	lo, hi := fs[0], fs[0]
	for _, f := range fs {
		if f.Sessions < lo.Sessions {
			lo = f
		}
		if f.Sessions > hi.Sessions {
			hi = f
		}
	}
	if hi.Sessions > lo.Sessions && lo.CPUPerFrameMicros > 0 && lo.CPUPerDeliveryMicros > 0 {
		fmt.Fprintf(w, "scale growth N=%d → N=%d (×%.0f sessions): CPU %s, CPU per frame ×%.2f, per delivered chunk ×%.2f, RSS %s, p99 %s\n",
			lo.Sessions, hi.Sessions, float64(hi.Sessions)/float64(lo.Sessions), ratio(hi.CPUPercent, lo.CPUPercent),
			hi.CPUPerFrameMicros/lo.CPUPerFrameMicros, hi.CPUPerDeliveryMicros/lo.CPUPerDeliveryMicros,
			ratio(hi.StreamRSSMiB, lo.StreamRSSMiB), ratio(hi.P99Micros, lo.P99Micros))
	}
}

func ratio(a, b float64) string {
	if b <= 0 {
		return "-"
	}
	return fmt.Sprintf("×%.2f", a/b)
}
