package bridgetest

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/internal/scriptagent"
)

// The benchmarks of issue 17's goals, in process (docs/performance.md has
// the end-to-end figures of ahp-bench beside them):
//
//	go test -run - -bench 'Fanout|LatencyPath|LongResponse' ./internal/bridgetest

// BenchmarkFanout is the coalesced 64-byte flood read by 1, 10 and 100
// WebSocket clients of one session, so that the ratios to one client come
// from the same run; b.N chunks are streamed to each. The readers share
// this process and its cores with the bridge, so how they read decides
// much of the figure:
//   - readers=light measures the bridge's capacity to serve N
//     subscribers: reader 0 decodes every frame as a client does and
//     checks the exact text, the others only count frames to the last
//     chunk;
//   - readers=full has every reader decode every frame and check the text:
//     N real clients on the bridge's cores, readers included.
func BenchmarkFanout(b *testing.B) {
	for _, readers := range []string{readersLight, readersFull} {
		for _, clients := range []int{1, 10, 100} {
			b.Run(fmt.Sprintf("readers=%s/clients=%d", readers, clients), func(b *testing.B) {
				runFlood(b, floodOpts{coalesce: true, version: "1.0.0", clients: clients, readers: readers})
			})
		}
	}
}

// BenchmarkLatencyPath is the path from the agent's write of a chunk to a
// client's read of it (agent stdout → acp → mapping → sequencer →
// per-connection queue → socket) at a pace the bridge keeps up with: 10
// clients, 1 000 chunks/s of 64 bytes. Every chunk carries its write time
// (the agent is on this machine, so the clocks agree); p50 and p99 are over
// every chunk at every client. -benchtime 3000x is three seconds of stream.
func BenchmarkLatencyPath(b *testing.B) {
	const clients = 10
	lat := make([][]time.Duration, clients)
	runFlood(b, floodOpts{coalesce: true, version: "1.0.0", clients: clients, rate: 1000,
		onFrame: func(i int, msg []byte) {
			now := time.Now().UnixNano()
			lat[i] = appendStamps(lat[i], msg, now)
		}})
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	require.Len(b, all, clients*b.N, "every client reads every chunk once")
	// The first reader of each chunk: what the bridge adds before the
	// readers, sharing this process's two cores, queue for a CPU.
	first := make([]time.Duration, b.N)
	for k := range first {
		first[k] = lat[0][k]
		for _, l := range lat[1:] {
			first[k] = min(first[k], l[k])
		}
	}
	slices.Sort(first)
	b.ReportMetric(float64(first[len(first)/2].Microseconds()), "p50-first-µs")
	slices.Sort(all)
	b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
}

// appendStamps appends, for every chunk in msg, now minus the write time
// the agent stamped into it.
func appendStamps(out []time.Duration, msg []byte, now int64) []time.Duration {
	prefix := []byte(scriptagent.BenchStampPrefix)
	for {
		i := bytes.Index(msg, prefix)
		if i < 0 {
			return out
		}
		msg = msg[i+len(prefix):]
		if len(msg) < scriptagent.BenchStampDigits+1 || msg[scriptagent.BenchStampDigits] != '#' {
			continue
		}
		at, err := strconv.ParseInt(string(msg[:scriptagent.BenchStampDigits]), 10, 64)
		if err != nil {
			continue
		}
		out = append(out, time.Duration(now-at))
		msg = msg[scriptagent.BenchStampDigits:]
	}
}

// BenchmarkLongResponse streams one long response, b.N chunks of 1 KiB
// (-benchtime 50000x is the 51 MB of ahp-bench's long-response), to one
// client and reports the growth of this process's peak RSS over the stream
// as a multiple of the text: what the session's state, the replay ring and
// the frames in flight hold at once, plus the garbage the collector lets
// accumulate. The reader only looks for the last chunk and drops every
// frame. The peak is reset (clear_refs) before the stream, so one
// iteration is one measurement; run it with -count for several.
func BenchmarkLongResponse(b *testing.B) { benchLongResponse(b, nil) }

// procStatusKiB reads a "Name:   N kB" line of /proc/self/status.
func procStatusKiB(b *testing.B, name string) int64 {
	raw, err := os.ReadFile("/proc/self/status")
	require.NoError(b, err)
	for line := range strings.SplitSeq(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			require.NoError(b, err)
			return n
		}
	}
	b.Fatalf("no %s in /proc/self/status", name)
	return 0
}
