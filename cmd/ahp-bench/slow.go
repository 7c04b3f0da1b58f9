package main

import (
	"context"
	"fmt"
	"time"
)

// SlowClient is scenario 8: an endless stream to one session with one
// client that reads and one that has stopped reading, next to the same
// stream without the stalled client. The session's state keeps every
// streamed byte of the active turn (a new subscriber's snapshot must hold
// it), so the bridge grows with the stream either way; what the stalled
// client must not add is anything beyond its bounded queue.
type SlowClient struct {
	WithStalled    SlowRun `json:"withStalledClient"`
	WithoutStalled SlowRun `json:"withoutStalledClient"`
}

// SlowRun is one endless-stream run.
type SlowRun struct {
	Seconds float64 `json:"seconds"`
	// FastChunksPerSec is what the reading client received.
	FastChunksPerSec float64 `json:"fastChunksPerSec"`
	// RSS of the bridge: the first and last second's peak, and overall.
	FirstSecondRSSMiB float64 `json:"firstSecondRssMiB"`
	LastSecondRSSMiB  float64 `json:"lastSecondRssMiB"`
	PeakRSSMiB        float64 `json:"peakRssMiB"`
	// StreamedMiB is the chunk payload the reading client received.
	StreamedMiB float64 `json:"streamedMiB"`
	// SlowDropped tells whether the bridge closed the stalled client.
	SlowDropped bool `json:"slowClientDropped,omitempty"`
	// SlowReceived is how many chunks the stalled client got before that.
	SlowReceived int `json:"slowClientChunks,omitempty"`
}

// slowClient runs the endless stream with and without a stalled client,
// the clients speaking proto.
func slowClient(ctx context.Context, cfg Config, proto string, d time.Duration) (*SlowClient, error) {
	with, err := slowRun(ctx, cfg, proto, d, true)
	if err != nil {
		return nil, err
	}
	without, err := slowRun(ctx, cfg, proto, d, false)
	if err != nil {
		return nil, err
	}
	return &SlowClient{WithStalled: *with, WithoutStalled: *without}, nil
}

// slowRun streams an effectively endless flood for d, with a stalled
// client or not.
func slowRun(ctx context.Context, cfg Config, proto string, d time.Duration, stalled bool) (*SlowRun, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	bp, err := startBridge(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer bp.stop()
	const ch = "ahp-session:/00000000-0000-4000-8000-5104c11e0000"
	fast, err := dialProbe(ctx, bp.URL, 0, proto, false, 0)
	if err != nil {
		return nil, err
	}
	defer fast.close()
	if err := fast.initialize(ctx, "bench-fast"); err != nil {
		return nil, err
	}
	turns, err := fast.createSession(ctx, ch)
	if err != nil {
		return nil, err
	}
	resume := func() {}
	var slow *probe
	if stalled {
		slow, err = dialProbe(ctx, bp.URL, 0, proto, false, 0)
		if err != nil {
			return nil, err
		}
		defer slow.close()
		if err := slow.initialize(ctx, "bench-slow", ch, turns); err != nil {
			return nil, err
		}
		resume = slow.stall()
	}
	// Far more chunks than can be sent in d: the stream does not end.
	if err := fast.startTurn(turns, "00000000-0000-4000-9000-5104c11e0000", benchPrompt(99999999, cfg.Size, 0, 0)); err != nil {
		resume()
		return nil, err
	}
	start := time.Now()
	var first, last, peak int64
	for time.Since(start) < d {
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			resume()
			return nil, ctx.Err()
		}
		u, err := readProc(bp.pid())
		if err != nil {
			resume()
			return nil, err
		}
		el := time.Since(start)
		if el <= time.Second {
			first = max(first, u.RSS)
		}
		if el >= d-time.Second {
			last = max(last, u.RSS)
		}
		peak = max(peak, u.PeakRSS)
	}
	// The fast client's count is read once it has been closed below; take
	// the elapsed time now.
	elapsed := time.Since(start)
	resume()
	fast.close()
	mib := func(b int64) float64 { return float64(b) / (1 << 20) }
	r := &SlowRun{Seconds: elapsed.Seconds(), FirstSecondRSSMiB: mib(first), LastSecondRSSMiB: mib(last),
		PeakRSSMiB: mib(peak), StreamedMiB: mib(int64(fast.chunks) * int64(cfg.Size))}
	r.FastChunksPerSec = float64(fast.chunks) / elapsed.Seconds()
	if slow != nil {
		// A dropped client reads what its socket still holds, then the close.
		select {
		case <-slow.done:
			r.SlowDropped = true
		case <-time.After(2 * time.Second):
		}
		slow.close()
		r.SlowReceived = slow.chunks
	}
	return r, nil
}

func formatSlow(s *SlowClient) string {
	w, o := s.WithStalled, s.WithoutStalled
	return fmt.Sprintf("slow client: %.0f s endless stream; with a stalled client: reader %.0f chunks/s (%.0f MiB streamed), stalled client dropped: %v after %d chunks, bridge RSS first s %.1f MiB, last s %.1f MiB, peak %.1f MiB\n"+
		"             without it:                      reader %.0f chunks/s (%.0f MiB streamed), bridge RSS first s %.1f MiB, last s %.1f MiB, peak %.1f MiB",
		w.Seconds, w.FastChunksPerSec, w.StreamedMiB, w.SlowDropped, w.SlowReceived, w.FirstSecondRSSMiB, w.LastSecondRSSMiB, w.PeakRSSMiB,
		o.FastChunksPerSec, o.StreamedMiB, o.FirstSecondRSSMiB, o.LastSecondRSSMiB, o.PeakRSSMiB)
}
