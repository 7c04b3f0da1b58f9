// Command ahp-bench measures ahp-bridge on loopback: an ACP flood agent
// (`ahp-bridge demo-agent`, prompt "bench …") read directly with
// acp-go-sdk, and through a separate `ahp-bridge serve` process by 1, 10
// and 100 AHP clients on one session and by 100 sessions in parallel, plus
// idle memory per session and per client and the start-up time. Its AHP
// clients speak 1.0.0 (the host's own dialect), or 0.7.0 or 0.3.0 (-protocol), or several in one run. It prints
// a table and writes the figures as JSON. See docs/performance.md.
//
//	go build -o /tmp/ahpb ./cmd/ahp-bridge && go run ./cmd/ahp-bench -bin /tmp/ahpb
//	go run ./cmd/ahp-bench -bin /tmp/ahpb -only bridge-1,bridge-100 -protocol 1.0.0,0.3.0 -repeat 3
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ahp-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg Config
	var only, out, protos string
	fs.StringVar(&cfg.Bin, "bin", "", "the ahp-bridge `BINARY` to measure (required)")
	fs.StringVar(&cfg.Agent, "agent", "", "the ahp-bridge `BINARY` whose demo-agent the bridges serve (default -bin; set it to compare an older bridge with today's agent)")
	fs.IntVar(&cfg.Chunks, "n", 100000, "chunks per flood (direct, 1 and 10 clients)")
	fs.IntVar(&cfg.FanoutN, "n-fanout", 0, "chunks per flood with 100 clients (default n/10)")
	fs.IntVar(&cfg.SessionsN, "n-sessions", 0, "chunks per session with 100 sessions (default n/100)")
	fs.IntVar(&cfg.Size, "size", 64, "bytes per chunk")
	fs.IntVar(&cfg.ToolEvery, "tool-every", 50, "bridge-1-tools: a tool call after every N chunks")
	fs.IntVar(&cfg.LatencyRate, "latency-rate", 1000, "chunks per second in the latency scenarios")
	fs.IntVar(&cfg.LatencyN, "latency-n", 3000, "chunks per latency scenario")
	fs.IntVar(&cfg.LongN, "long-n", 50000, "chunks of the long response (long-response)")
	fs.IntVar(&cfg.LongSize, "long-size", 1024, "bytes per chunk of the long response (long-response)")
	fs.IntVar(&cfg.FanoutSize, "fanout", 100, "clients on one session (bridge-100)")
	fs.IntVar(&cfg.Sessions, "sessions", 100, "parallel sessions (sessions-100x1)")
	fs.IntVar(&cfg.Idle, "idle", 1000, "idle sessions and idle clients (memory)")
	fs.IntVar(&cfg.StartupRuns, "startup-runs", 10, "start-up samples")
	fs.DurationVar(&cfg.SlowFor, "slow-for", 10*time.Second, "length of the endless stream with a stalled client (slow-client)")
	fs.StringVar(&protos, "protocol", v100, "comma-separated AHP `VERSIONS` the clients speak ("+strings.Join(protocols, ", ")+
		"); each bridged flow runs once per version, memory, startup and slow-client with the first")
	fs.IntVar(&cfg.Repeat, "repeat", 1, "run every flow scenario `N` times (round by round) and summarize min and median")
	fs.BoolVar(&cfg.StateNone, "state-none", false, "run the bridges with --state none (default: each keeps its sessions in a fresh state file, as serve does)")
	var scaleN string
	fs.StringVar(&scaleN, "scale-n", "10,100,500", "scale: comma-separated session `COUNTS`, one flow each")
	fs.DurationVar(&cfg.ScaleFor, "scale-for", 30*time.Second, "scale: how long each session streams")
	fs.IntVar(&cfg.ScaleRate, "scale-rate", 50, "scale: chunks per second per session")
	fs.IntVar(&cfg.ScaleMinSize, "scale-min", 20, "scale: smallest chunk, bytes (none below the 29-byte stamp)")
	fs.IntVar(&cfg.ScaleMaxSize, "scale-max", 200, "scale: largest chunk, bytes")
	fs.DurationVar(&cfg.ScaleToolFor, "scale-tool-every", 2*time.Second, "scale: a tool call this often per session")
	fs.IntVar(&cfg.ScalePermEvery, "scale-perm-every", 5, "scale: every `N`th tool call asks for a confirmation a client answers")
	fs.IntVar(&cfg.ScaleClients, "scale-clients", 3, "scale: session i has 1 + i%`N` clients")
	fs.StringVar(&cfg.ScaleProfile, "scale-profile", "", "scale: write a CPU profile of the bridge over the middle of each stream and a heap profile after it into `DIR` (the bridge needs serve --pprof)")
	fs.BoolVar(&cfg.NoPin, "no-pin", false, "scale: do not pin the bridge to one CPU and the agent and clients to the others")
	fs.StringVar(&only, "only", "", "comma-separated scenarios to run (default all: "+strings.Join(AllScenarios, ",")+")")
	fs.StringVar(&out, "json", "ahp-bench.json", "write the report to `FILE` (empty: don't)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if cfg.Bin == "" {
		fmt.Fprintln(stderr, "ahp-bench: -bin is required (build it with: go build -o /tmp/ahpb ./cmd/ahp-bridge)")
		return 2
	}
	bin, err := filepath.Abs(cfg.Bin)
	if err != nil {
		fmt.Fprintf(stderr, "ahp-bench: -bin %q: %v\n", cfg.Bin, err)
		return 2
	}
	cfg.Bin = bin
	if cfg.Agent != "" {
		if cfg.Agent, err = filepath.Abs(cfg.Agent); err != nil {
			fmt.Fprintf(stderr, "ahp-bench: -agent: %v\n", err)
			return 2
		}
	}
	for _, f := range strings.Split(scaleN, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			fmt.Fprintf(stderr, "ahp-bench: -scale-n %q: want positive session counts separated by commas\n", scaleN)
			return 2
		}
		cfg.ScaleN = append(cfg.ScaleN, n)
	}
	if only != "" {
		cfg.Only = strings.Split(only, ",")
	}
	if protos != "" {
		cfg.Protocols = strings.Split(protos, ",")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := Run(ctx, cfg, func(line string) { fmt.Fprintln(stderr, "ahp-bench:", line) })
	if rep != nil {
		rep.Command = "ahp-bench " + strings.Join(args, " ")
		printTable(stdout, rep)
		if out != "" {
			b, jerr := json.MarshalIndent(rep, "", "  ")
			if jerr == nil {
				jerr = os.WriteFile(out, append(b, '\n'), 0o644)
			}
			if jerr != nil {
				fmt.Fprintf(stderr, "ahp-bench: writing %s: %v\n", out, jerr)
				return 1
			}
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "ahp-bench: %v\n", err)
		return 1
	}
	return 0
}

// printTable writes the report as aligned text tables.
func printTable(w io.Writer, r *Report) {
	fmt.Fprintf(w, "machine: %d cores, %s, %s, %s; load average %s at start, %s at end\n\n", r.Machine.Cores, r.Machine.CPUModel,
		r.Machine.OS, r.Machine.GoVersion, r.Machine.LoadBefore, r.Machine.LoadAfter)
	if len(r.Protocols) > 0 {
		fmt.Fprintf(w, "AHP clients speak %s\n\n", strings.Join(r.Protocols, " and "))
	}
	if len(r.Flows) > 0 {
		fmt.Fprintf(w, "%-15s %5s %4s %5s %5s %7s %5s %6s %11s %8s %12s %9s %9s %9s %7s %7s %8s\n",
			"scenario", "ahp", "run", "sess", "cli", "chunks", "bytes", "pace/s", "chunks/s", "MB/s", "aggr.chunk/s",
			"p50 µs", "p99 µs", "max µs", "cpu s", "agent s", "peak MiB")
		for _, f := range r.Flows {
			pace := "-"
			if f.Rate > 0 {
				pace = fmt.Sprint(f.Rate)
			}
			proto, run := "-", "-"
			if f.Protocol != "" {
				proto = f.Protocol
			}
			if f.Run > 0 {
				run = fmt.Sprint(f.Run)
			}
			fmt.Fprintf(w, "%-15s %5s %4s %5d %5d %7d %5d %6s %11.0f %8.2f %12.0f %9.0f %9.0f %9.0f %7.2f %7.2f %8.1f\n",
				f.Name, proto, run, f.Sessions, f.Clients, f.Chunks, f.Size, pace, f.ChunksPerSec, f.MBPerSec, f.AggregateChunksPerSec,
				f.P50Micros, f.P99Micros, f.MaxMicros, f.CPUSeconds, f.AgentCPUSeconds, f.PeakRSSMiB)
		}
		repeated := false
		for _, s := range r.Summary {
			repeated = repeated || s.Runs > 1
		}
		if repeated {
			fmt.Fprintf(w, "\n%-15s %5s %4s %11s %11s %11s %9s %9s %7s\n", "summary", "ahp", "runs",
				"min chunk/s", "med chunk/s", "max chunk/s", "med p50", "med p99", "med cpu")
			for _, s := range r.Summary {
				proto := "-"
				if s.Protocol != "" {
					proto = s.Protocol
				}
				fmt.Fprintf(w, "%-15s %5s %4d %11.0f %11.0f %11.0f %9.0f %9.0f %7.2f\n", s.Name, proto, s.Runs,
					s.MinChunksPerSec, s.MedianChunksPerSec, s.MaxChunksPerSec, s.MedianP50Micros, s.MedianP99Micros, s.MedianCPUSeconds)
			}
		}
		med := "" // the ratios are of medians over the runs
		if repeated {
			med = " (medians)"
		}
		p0 := ""
		if len(r.Protocols) > 0 {
			p0 = r.Protocols[0]
		}
		fmt.Fprintln(w)
		if b := r.Sum(scBridge1, p0); b != nil {
			for _, d := range []string{scPipe, scDirect, scDirectSDK} {
				if d := r.Sum(d, ""); d != nil && d.MedianChunksPerSec > 0 {
					fmt.Fprintf(w, "bridge-1 / %s throughput%s, AHP %s: %.2f\n", d.Name, med, p0, b.MedianChunksPerSec/d.MedianChunksPerSec)
				}
			}
		}
		for _, n := range []string{scBridge10, scFanout, scBridge10F, scFanoutF} {
			if o, b := r.Sum(scBridge1, p0), r.Sum(n, p0); o != nil && b != nil && o.MedianChunksPerSec > 0 {
				fmt.Fprintf(w, "%s / bridge-1 throughput%s, AHP %s: %.2f\n", n, med, p0, b.MedianChunksPerSec/o.MedianChunksPerSec)
			}
		}
		if b := r.Sum(scLat10, p0); b != nil {
			fmt.Fprintf(w, "latency, 10 clients at %d chunks/s%s, AHP %s: p50 %.0f µs, p99 %.0f µs", r.Flow(scLat10).Rate, med, p0,
				b.MedianP50Micros, b.MedianP99Micros)
			if d := r.Sum(scLatDirect, ""); d != nil {
				fmt.Fprintf(w, " (added to the direct read: p50 %.0f µs, p99 %.0f µs)", b.MedianP50Micros-d.MedianP50Micros, b.MedianP99Micros-d.MedianP99Micros)
			}
			fmt.Fprintln(w)
		}
		for _, p := range r.Protocols[min(1, len(r.Protocols)):] {
			for _, s := range r.Summary {
				if s.Protocol != p0 {
					continue
				}
				if f := r.Flow(s.Name); f != nil && f.Rate > 0 {
					continue // paced: the throughput is the pace
				}
				if o := r.Sum(s.Name, p); o != nil && o.MedianChunksPerSec > 0 {
					fmt.Fprintf(w, "%s: AHP %s / AHP %s throughput%s: %.0f %%\n", s.Name, p0, p, med, 100*s.MedianChunksPerSec/o.MedianChunksPerSec)
				}
			}
		}
	}
	for _, f := range r.Flows {
		if f.Name == scLong && f.PeakGrowthPerText > 0 {
			fmt.Fprintf(w, "long response (%s, AHP %s): %.1f MB of text; bridge RSS %.1f MiB before, peak %.1f MiB: growth %.2f × the text\n",
				runLabel(f), f.Protocol, float64(f.Chunks)*float64(f.Size)/1e6, f.RSSBeforeMiB, f.PeakRSSMiB, f.PeakGrowthPerText)
		}
	}
	printScale(w, r)
	if m := r.Memory; m != nil {
		fmt.Fprintf(w, "\nmemory: %d idle sessions %.1f KiB each, %d idle clients %.1f KiB each (bridge RSS %.0f → %.0f → %.0f KiB)\n",
			m.Sessions, m.PerSessionKiB, m.Clients, m.PerClientKiB, m.BaseRSSKiB, m.WithSessionsKiB, m.WithClientsKiB)
	}
	if s := r.Startup; s != nil {
		fmt.Fprintf(w, "start-up to READY (%d runs): min %.1f ms, median %.1f ms, max %.1f ms\n", s.Runs, s.MinMs, s.MedianMs, s.MaxMs)
	}
	if s := r.Slow; s != nil {
		fmt.Fprintln(w, formatSlow(s))
	}
}

func runLabel(f Flow) string {
	if f.Run > 0 {
		return fmt.Sprintf("run %d", f.Run)
	}
	return "one run"
}
