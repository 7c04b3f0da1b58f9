// Command ahp-bench measures ahp-bridge on loopback: an ACP flood agent
// (`ahp-bridge demo-agent`, prompt "bench …") read directly with
// acp-go-sdk, and through a separate `ahp-bridge serve` process by 1, 10
// and 100 AHP clients on one session and by 100 sessions in parallel, plus
// idle memory per session and per client and the start-up time. It prints
// a table and writes the figures as JSON. See docs/performance.md.
//
//	go build -o /tmp/ahpb ./cmd/ahp-bridge && go run ./cmd/ahp-bench -bin /tmp/ahpb
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
	var only, out string
	fs.StringVar(&cfg.Bin, "bin", "", "the ahp-bridge `BINARY` to measure (required)")
	fs.IntVar(&cfg.Chunks, "n", 100000, "chunks per flood (direct, 1 and 10 clients)")
	fs.IntVar(&cfg.FanoutN, "n-fanout", 0, "chunks per flood with 100 clients (default n/10)")
	fs.IntVar(&cfg.SessionsN, "n-sessions", 0, "chunks per session with 100 sessions (default n/100)")
	fs.IntVar(&cfg.Size, "size", 64, "bytes per chunk")
	fs.IntVar(&cfg.ToolEvery, "tool-every", 50, "bridge-1-tools: a tool call after every N chunks")
	fs.IntVar(&cfg.LatencyRate, "latency-rate", 1000, "chunks per second in the latency scenarios")
	fs.IntVar(&cfg.LatencyN, "latency-n", 3000, "chunks per latency scenario")
	fs.IntVar(&cfg.FanoutSize, "fanout", 100, "clients on one session (bridge-100)")
	fs.IntVar(&cfg.Sessions, "sessions", 100, "parallel sessions (sessions-100x1)")
	fs.IntVar(&cfg.Idle, "idle", 1000, "idle sessions and idle clients (memory)")
	fs.IntVar(&cfg.StartupRuns, "startup-runs", 10, "start-up samples")
	fs.DurationVar(&cfg.SlowFor, "slow-for", 10*time.Second, "length of the endless stream with a stalled client (slow-client)")
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
	if only != "" {
		cfg.Only = strings.Split(only, ",")
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
	if len(r.Flows) > 0 {
		fmt.Fprintf(w, "%-15s %5s %5s %7s %5s %6s %11s %8s %12s %9s %9s %9s %7s %7s %8s\n",
			"scenario", "sess", "cli", "chunks", "bytes", "pace/s", "chunks/s", "MB/s", "aggr.chunk/s",
			"p50 µs", "p99 µs", "max µs", "cpu s", "agent s", "peak MiB")
		for _, f := range r.Flows {
			pace := "-"
			if f.Rate > 0 {
				pace = fmt.Sprint(f.Rate)
			}
			fmt.Fprintf(w, "%-15s %5d %5d %7d %5d %6s %11.0f %8.2f %12.0f %9.0f %9.0f %9.0f %7.2f %7.2f %8.1f\n",
				f.Name, f.Sessions, f.Clients, f.Chunks, f.Size, pace, f.ChunksPerSec, f.MBPerSec, f.AggregateChunksPerSec,
				f.P50Micros, f.P99Micros, f.MaxMicros, f.CPUSeconds, f.AgentCPUSeconds, f.PeakRSSMiB)
		}
		if d, b := r.Flow(scDirect), r.Flow(scBridge1); d != nil && b != nil && d.ChunksPerSec > 0 {
			fmt.Fprintf(w, "\nbridge-1 / direct throughput: %.0f %%\n", 100*b.ChunksPerSec/d.ChunksPerSec)
		}
		if o, b := r.Flow(scBridge1), r.Flow(scFanout); o != nil && b != nil && o.ChunksPerSec > 0 {
			fmt.Fprintf(w, "bridge-100 / bridge-1 throughput: %.0f %%\n", 100*b.ChunksPerSec/o.ChunksPerSec)
		}
		if d, b := r.Flow(scLatDirect), r.Flow(scLat10); d != nil && b != nil {
			fmt.Fprintf(w, "added latency, 10 clients at %d chunks/s: p50 %.0f µs, p99 %.0f µs\n",
				b.Rate, b.P50Micros-d.P50Micros, b.P99Micros-d.P99Micros)
		}
	}
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
