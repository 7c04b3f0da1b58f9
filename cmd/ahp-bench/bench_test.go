package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/internal/bridgetest"
)

// TestSmoke runs every scenario with tiny sizes against the real binary
// and checks that the report is complete and consistent. It asserts no
// timings: the figures of a shared CI machine mean nothing.
func TestSmoke(t *testing.T) {
	t.Parallel() // mostly waits on a subprocess or a timer: overlaps the CPU-bound tests
	bin := bridgetest.Binary(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute) // each scenario has its own minute (cfg.Timeout)
	defer cancel()
	cfg := Config{Bin: bin, Chunks: 300, FanoutN: 30, SessionsN: 15, Sessions: 20, FanoutSize: 20,
		LatencyN: 100, LatencyRate: 2000, ToolEvery: 10, LongN: 100, LongSize: 1024, Idle: 20, StartupRuns: 2, SlowFor: time.Second, Timeout: time.Minute,
		Only: slices.DeleteFunc(slices.Clone(AllScenarios), func(s string) bool { return s == scScale })} // TestScaleSmoke has it
	var lines []string
	rep, err := Run(ctx, cfg, func(l string) { lines = append(lines, l) })
	require.NoError(t, err)
	require.Len(t, rep.Flows, 14)
	for i, name := range AllScenarios[:14] {
		f := rep.Flows[i]
		assert.Equal(t, name, f.Name)
		assert.Equal(t, int64(f.Chunks*(f.Clients*f.Sessions-f.LightClients)), f.Deliveries, "%s: every client saw every chunk", name)
		if f.LightClients > 0 {
			// Each light client counted the frames up to the last chunk.
			assert.True(t, f.Clients > 1 && f.Rate == 0, "%s: light clients only beside a fan-out's first", name)
			assert.GreaterOrEqual(t, f.ActionFrames, int64(f.LightClients+1), name)
		}
		assert.Zero(t, f.Misordered, "%s: chunks arrive in order", name)
		assert.Zero(t, f.Corrupt, "%s: every chunk's exact text", name)
		assert.Positive(t, f.ChunksPerSec, name)
		assert.Positive(t, f.MBPerSec, name)
		if name == scPipe {
			continue // lines counted, no stamps read
		}
		assert.Positive(t, f.P50Micros, name)
		assert.GreaterOrEqual(t, f.P99Micros, f.P50Micros, name)
		assert.GreaterOrEqual(t, f.MaxMicros, f.P99Micros, name)
		assert.Positive(t, f.PeakRSSMiB, name)
	}
	assert.Equal(t, 20, rep.Flow(scFanout).Clients)
	assert.Equal(t, 19, rep.Flow(scFanout).LightClients)
	assert.Zero(t, rep.Flow(scFanoutF).LightClients)
	assert.Equal(t, 20, rep.Flow(scSessions).Sessions)
	assert.Equal(t, 2000, rep.Flow(scLat10).Rate)
	assert.Equal(t, 1024, rep.Flow(scLong).Size)
	assert.Positive(t, rep.Flow(scLong).RSSBeforeMiB)
	assert.Positive(t, rep.Flow(scLong).PeakGrowthPerText)
	require.NotNil(t, rep.Memory)
	assert.Positive(t, rep.Memory.WithSessionsKiB)
	assert.Positive(t, rep.Memory.WithClientsKiB)
	require.NotNil(t, rep.Startup)
	assert.Equal(t, 2, rep.Startup.Runs)
	assert.Positive(t, rep.Startup.MinMs)
	require.NotNil(t, rep.Slow)
	for _, r := range []SlowRun{rep.Slow.WithStalled, rep.Slow.WithoutStalled} {
		assert.Positive(t, r.FastChunksPerSec)
		assert.Positive(t, r.PeakRSSMiB)
		assert.Positive(t, r.StreamedMiB)
	}
	assert.Len(t, lines, 17, "one progress line per scenario")

	var out bytes.Buffer
	printTable(&out, rep)
	for _, want := range append(AllScenarios[:14], "bridge-1 / pipe throughput", "bridge-1 / direct throughput", "bridge-1 / direct-sdk throughput",
		"bridge-100 / bridge-1", "latency, 10 clients", "long response", "memory:", "start-up to READY", "slow client:") {
		assert.Contains(t, out.String(), want)
	}
}

// The command writes the table and the JSON report.
func TestCommand(t *testing.T) {
	bin := bridgetest.Binary(t)
	file := filepath.Join(t.TempDir(), "report.json")
	var stdout, stderr bytes.Buffer
	code := run([]string{"-bin", bin, "-only", "bridge-1,startup", "-n", "500", "-startup-runs", "1", "-json", file}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	assert.Contains(t, stdout.String(), "bridge-1")
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	var rep Report
	require.NoError(t, json.Unmarshal(b, &rep))
	require.Len(t, rep.Flows, 1)
	assert.Equal(t, 500, rep.Flows[0].Chunks)
	assert.NotNil(t, rep.Startup)
	assert.Contains(t, rep.Command, "-only bridge-1,startup")

	stderr.Reset()
	assert.Equal(t, 2, run([]string{"-n", "5"}, &stdout, &stderr), "-bin is required")
	assert.Contains(t, stderr.String(), "-bin is required")
	stderr.Reset()
	assert.Equal(t, 1, run([]string{"-bin", bin, "-only", "nope", "-json", ""}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), `unknown scenario "nope"`)
}

// The probes speak 0.3.0 as well as 1.0.0: with both and two rounds, every
// bridged flow runs once per protocol per round, every client of either
// dialect sees every chunk, and the summary compares the dialects.
func TestDialects(t *testing.T) {
	t.Parallel() // mostly waits on a subprocess or a timer: overlaps the CPU-bound tests
	bin := bridgetest.Binary(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cfg := Config{Bin: bin, Chunks: 500, FanoutN: 100, FanoutSize: 5, ToolEvery: 10, Protocols: []string{v100, v030}, Repeat: 2,
		Only: []string{scDirect, scBridge1, scBridge1T, scFanout, scMemory}, Idle: 5, Timeout: time.Minute}
	rep, err := Run(ctx, cfg, nil)
	require.NoError(t, err)
	require.Len(t, rep.Flows, 2*(1+3*2))
	for _, f := range rep.Flows {
		assert.Equal(t, int64(f.Chunks*(f.Clients*f.Sessions-f.LightClients)), f.Deliveries, "%s %s #%d: every client saw every chunk", f.Name, f.Protocol, f.Run)
		assert.Zero(t, f.Misordered, "%s %s #%d", f.Name, f.Protocol, f.Run)
		assert.Zero(t, f.Corrupt, "%s %s #%d", f.Name, f.Protocol, f.Run)
		assert.Contains(t, []int{1, 2}, f.Run)
		if f.Name == scDirect {
			assert.Empty(t, f.Protocol)
		} else {
			assert.Contains(t, []string{v100, v030}, f.Protocol)
		}
	}
	require.Len(t, rep.Summary, 1+3*2)
	for _, s := range rep.Summary {
		assert.Equal(t, 2, s.Runs, s.Name)
		assert.LessOrEqual(t, s.MinChunksPerSec, s.MedianChunksPerSec, s.Name)
		assert.LessOrEqual(t, s.MedianChunksPerSec, s.MaxChunksPerSec, s.Name)
	}
	assert.NotNil(t, rep.Sum(scFanout, v030))
	require.NotNil(t, rep.Memory, "memory runs with the first protocol")

	var out bytes.Buffer
	printTable(&out, rep)
	assert.Contains(t, out.String(), "bridge-1: AHP 1.0.0 / AHP 0.3.0 throughput (medians)")
	assert.Contains(t, out.String(), "bridge-100: AHP 1.0.0 / AHP 0.3.0 throughput (medians)")

	var stderr bytes.Buffer
	assert.Equal(t, 1, run([]string{"-bin", bin, "-protocol", "0.4.0", "-json", ""}, &out, &stderr))
	assert.Contains(t, stderr.String(), `unknown protocol "0.4.0"`)
}

// A full probe counts a chunk whose text is not exactly the agent's.
func TestObserveChecksText(t *testing.T) {
	chunk := func(i int, pad string) string {
		return fmt.Sprintf("T%019d#%08d%s", time.Now().UnixNano(), i, pad)
	}
	c := newCounter(3)
	c.pad = 35 // 64-byte chunks
	ok := strings.Repeat("x", 35)
	frame := `{"jsonrpc":"2.0","method":"action","params":{"action":{"content":"` + chunk(0, ok) + chunk(1, ok) + `"}}}`
	assert.Equal(t, 2, c.observe([]byte(frame), time.Now()))
	assert.Zero(t, c.corrupt)
	for _, bad := range []string{ok[1:], ok + "x", ok[:10] + "y" + ok[11:]} {
		c.observe([]byte(`{"content":"`+chunk(2, bad)+`"}`), time.Now())
	}
	assert.Equal(t, 3, c.corrupt)
}

// TestScaleSmoke runs the scale scenario for about a second at N=10:
// sessions of one agent process with 1 to 3 clients each, chunks of varying
// size, tool calls of which some wait for a client's approval. Every client
// must get exactly every chunk's text, in order, with serverSeq increasing
// on each channel, and every confirmation must have been answered.
func TestScaleSmoke(t *testing.T) {
	t.Parallel()
	bin := bridgetest.Binary(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cfg := Config{Bin: bin, Only: []string{scScale}, ScaleN: []int{10}, ScaleFor: time.Second, ScaleRate: 50,
		ScaleToolFor: 100 * time.Millisecond, ScalePermEvery: 2, Timeout: time.Minute}
	rep, err := Run(ctx, cfg, nil)
	require.NoError(t, err)
	require.Len(t, rep.Flows, 1)
	f := rep.Flows[0]
	assert.Equal(t, "scale-10", f.Name)
	assert.Equal(t, 10, f.Sessions)
	assert.Equal(t, 50, f.Chunks)
	assert.Equal(t, 1+2+3+1+2+3+1+2+3+1, f.TotalClients, "session i has 1 + i%3 clients")
	assert.Equal(t, int64(f.Chunks*f.TotalClients), f.Deliveries, "every client saw every chunk")
	assert.Zero(t, f.Misordered, "chunks in order")
	assert.Zero(t, f.Corrupt, "every chunk's exact text")
	assert.Zero(t, f.SeqErrors, "serverSeq increases on every channel")
	// A tool call after every 5th chunk (100 ms at 50/s): 9 per session
	// before the last chunk (the probes count until then), every 2nd of
	// them asking.
	assert.Equal(t, 10*4, f.Approvals, "every confirmation answered")
	assert.Positive(t, f.CPUPercent)
	assert.Positive(t, f.FramesPerSec)
	assert.Positive(t, f.BytesPerSec)
	assert.Positive(t, f.RSSMiB)
	assert.Positive(t, f.StreamRSSMiB)
	assert.GreaterOrEqual(t, f.P99Micros, f.P50Micros)
	assert.NotEmpty(t, f.Pinning)

	var out bytes.Buffer
	printTable(&out, rep)
	assert.Contains(t, out.String(), "scale-10")
	assert.Contains(t, out.String(), "µs/frame")
}

// TestScaleProfile: -scale-profile runs the bridge with its profiles on and
// writes a CPU and a heap profile of the stream (gzipped, as pprof writes
// them).
func TestScaleProfile(t *testing.T) {
	t.Parallel()
	bin := bridgetest.Binary(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	cfg := Config{Bin: bin, Only: []string{scScale}, ScaleN: []int{5}, ScaleFor: 2 * time.Second, ScaleRate: 20,
		ScaleToolFor: time.Second, ScalePermEvery: 2, ScaleClients: 1, ScaleProfile: dir, Timeout: time.Minute}
	rep, err := Run(ctx, cfg, nil)
	require.NoError(t, err)
	require.Len(t, rep.Flows, 1)
	f := rep.Flows[0]
	assert.Equal(t, int64(f.Chunks*f.TotalClients), f.Deliveries, "every client saw every chunk")
	require.Equal(t, []string{filepath.Join(dir, "scale-5-cpu.pprof"), filepath.Join(dir, "scale-5-heap.pprof")}, f.Profiles)
	for _, file := range f.Profiles {
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		require.Greater(t, len(b), 2, file)
		assert.Equal(t, []byte{0x1f, 0x8b}, b[:2], "%s is a gzipped profile", file)
	}
}
