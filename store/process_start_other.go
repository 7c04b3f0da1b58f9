//go:build !linux && !darwin && !windows

package store

// processStart is unknown here: a holder is then judged by its pid and its
// heartbeat.
func processStart(int) int64 { return 0 }
