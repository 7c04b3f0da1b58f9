package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// freeLoopbackAddr returns a loopback address with a port free a moment
// ago, for a listener the bridge opens itself (its ops listener prints no
// address).
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port for the bridge's ops listener: %w", err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		return "", fmt.Errorf("finding a free port for the bridge's ops listener: %w", err)
	}
	return addr, nil
}

// profileResult is what takeProfiles wrote, or why it could not.
type profileResult struct {
	files []string
	err   error
}

// takeProfiles waits wait, then fetches a CPU profile of length span and
// a heap profile from the bridge's /debug/pprof/ at addr (serve --pprof)
// into dir as NAME-cpu.pprof and NAME-heap.pprof.
func takeProfiles(ctx context.Context, addr, dir, name string, wait, span time.Duration) profileResult {
	select {
	case <-time.After(wait):
	case <-ctx.Done():
		return profileResult{err: ctx.Err()}
	}
	var res profileResult
	secs := max(int(span.Seconds()), 1)
	for _, p := range []struct{ path, file string }{
		{fmt.Sprintf("/debug/pprof/profile?seconds=%d", secs), name + "-cpu.pprof"},
		{"/debug/pprof/heap", name + "-heap.pprof"},
	} {
		file := filepath.Join(dir, p.file)
		if err := fetchTo(ctx, "http://"+addr+p.path, file); err != nil {
			res.err = fmt.Errorf("profiling the bridge (-scale-profile): %w", err)
			return res
		}
		res.files = append(res.files, file)
	}
	return res
}

// fetchTo writes the body of a GET of url to file.
func fetchTo(ctx context.Context, url, file string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("GET %s: %s: %s (does the bridge have serve --pprof?)", url, resp.Status, b)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return fmt.Errorf("writing %s: %w", file, err)
	}
	return f.Close()
}
