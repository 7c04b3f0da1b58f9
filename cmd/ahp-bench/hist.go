package main

import (
	"math/bits"
	"time"
)

// histSubBits is the number of mantissa bits kept per power of two: 64
// sub-buckets, i.e. every recorded latency is within 1/64 (1.6 %) of its
// true value.
const histSubBits = 6

// hist is a log-linear latency histogram in microseconds. Each AHP probe
// owns one (no locking on the hot path) and they are merged at the end.
type hist struct {
	counts []uint64
	n      uint64
	max    time.Duration
}

func newHist() *hist { return &hist{counts: make([]uint64, 64<<histSubBits)} }

func histIndex(us uint64) int {
	const sub = 1 << histSubBits
	if us < 2*sub {
		return int(us)
	}
	e := bits.Len64(us) - histSubBits - 1 // us >> e is in [sub, 2*sub)
	return 2*sub + (e-1)*sub + int(us>>e) - sub
}

// histValue is the lowest microsecond value of bucket i.
func histValue(i int) uint64 {
	const sub = 1 << histSubBits
	if i < 2*sub {
		return uint64(i)
	}
	e := (i-2*sub)/sub + 1
	m := uint64((i-2*sub)%sub + sub)
	return m << e
}

func (h *hist) add(d time.Duration) {
	if d < 0 {
		d = 0
	}
	idx := histIndex(uint64(d / time.Microsecond))
	if idx >= len(h.counts) {
		idx = len(h.counts) - 1
	}
	h.counts[idx]++
	h.n++
	if d > h.max {
		h.max = d
	}
}

func (h *hist) merge(o *hist) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	if o.max > h.max {
		h.max = o.max
	}
}

// quantile returns the latency below which the fraction q of samples lie.
func (h *hist) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q * float64(h.n))
	if rank >= h.n {
		rank = h.n - 1
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen > rank {
			return time.Duration(histValue(i)) * time.Microsecond
		}
	}
	return h.max
}
