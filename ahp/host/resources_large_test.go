//go:build unix

package host

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/internal/testenv"
)

// largeFileTimeout bounds the waits of the large-file test, which moves
// 133 MiB through an instrumented (-race) process. It is a deadline for a
// test that hangs, not a measure of speed.
const largeFileTimeout = 5 * time.Minute

// TestResourceReadLargeFileStreams reads a 100 MiB binary file over a
// WebSocket and checks that the bridge never held it: everything the
// whole process allocated meanwhile (the host, and this test reading the
// answer as it streams in) stays under twice the file's size, which bounds
// the heap's growth. Holding the answer, 133 MiB of base64, in memory
// even once, and the JSON encoding around it, would exceed it.
func TestResourceReadLargeFileStreams(t *testing.T) {
	size := 100 << 20
	if testenv.Race {
		// Base64 and JSON under the race detector ran 10 s for 100 MiB.
		// The bound below is relative: an answer held whole (10 MiB of
		// base64 for 8 MiB) and its JSON encoding exceed twice the file,
		// while the stream allocates about a megabyte whatever the size.
		// .ci/run also runs this test without -race, at full size.
		size = 8 << 20
	}
	hs := newHarness(t, Options{})
	dir := realTempDir(t)
	name := filepath.Join(dir, "big.bin")
	want := writeRandomFile(t, name, size)

	wsc := hs.dialRaw(t)
	defer wsc.Close()
	ctx, cancel := context.WithTimeout(t.Context(), largeFileTimeout)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { _ = wsc.SetReadDeadline(time.Now()) })
	defer stop()
	call := func(id int, method string, params map[string]any) {
		t.Helper()
		b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		require.NoError(t, err)
		require.NoError(t, wsc.WriteMessage(websocket.TextMessage, b))
	}
	call(1, "initialize", map[string]any{"channel": RootURI, "protocolVersions": []string{current}, "clientId": "big"})
	call(2, "createSession", map[string]any{"channel": "ahp-session:/big", "provider": "fake", "workingDirectories": []string{fileURI(dir)}})
	awaitRaw(t, wsc, 2)

	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	call(3, "resourceRead", map[string]any{"channel": RootURI, "uri": fileURI(name), "encoding": "base64"})
	var got [sha256.Size]byte
	var n int64
	var tail []byte
	for {
		_, r, err := wsc.NextReader()
		require.NoError(t, err, "reading the answer")
		br := bufio.NewReaderSize(r, 4096)
		head, err := br.Peek(len(`{"jsonrpc":"2.0","id":3,"result":{"data":"`))
		require.NoError(t, err)
		if !bytes.Equal(head, []byte(`{"jsonrpc":"2.0","id":3,"result":{"data":"`)) {
			_, err := io.Copy(io.Discard, br) // an action notification
			require.NoError(t, err)
			continue
		}
		_, _ = br.Discard(len(head))
		// The data up to its closing quote, decoded as it arrives.
		h := sha256.New()
		n, err = io.Copy(h, base64.NewDecoder(base64.StdEncoding, &untilQuote{r: br}))
		require.NoError(t, err)
		copy(got[:], h.Sum(nil))
		tail, err = io.ReadAll(br)
		require.NoError(t, err)
		break
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)

	assert.Equal(t, int64(size), n)
	assert.Equal(t, want, got, "the file's bytes")
	assert.JSONEq(t, `{"encoding":"base64","contentType":"application/octet-stream"}`, "{"+string(bytes.TrimSuffix(bytes.TrimPrefix(tail, []byte(",")), []byte("}}")))+"}")
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("read %d MiB as %d MiB of base64; allocated meanwhile: %.1f MiB; heap in use %.1f → %.1f MiB",
		size>>20, base64.StdEncoding.EncodedLen(size)>>20, float64(allocated)/(1<<20), float64(before.HeapInuse)/(1<<20), float64(after.HeapInuse)/(1<<20))
	assert.Less(t, allocated, uint64(2*size), "the bridge's memory grew by more than twice the file")

	// The connection goes on.
	call(4, "ping", nil)
	awaitRaw(t, wsc, 4)
}

// writeRandomFile writes size pseudo-random bytes to name and returns
// their SHA-256.
func writeRandomFile(t *testing.T, name string, size int) [sha256.Size]byte {
	t.Helper()
	f, err := os.Create(name)
	require.NoError(t, err)
	defer f.Close()
	src := rand.NewChaCha8([32]byte{1, 6})
	h := sha256.New()
	buf := make([]byte, 1<<20)
	for written := 0; written < size; written += len(buf) {
		_, _ = src.Read(buf)
		_, _ = h.Write(buf)
		_, err := f.Write(buf)
		require.NoError(t, err)
	}
	require.NoError(t, f.Close())
	var sum [sha256.Size]byte
	copy(sum[:], h.Sum(nil))
	return sum
}

// awaitRaw reads messages until the response to id, which must succeed.
func awaitRaw(t *testing.T, wsc *websocket.Conn, id int) {
	t.Helper()
	for {
		b, err := readRaw(t, wsc)
		require.NoError(t, err)
		var m rpcMsg
		require.NoError(t, json.Unmarshal(b, &m))
		if m.isResponse() && string(m.ID) == fmt.Sprint(id) {
			require.Nil(t, m.Error, "request %d failed", id)
			return
		}
	}
}

// untilQuote reads up to (not including) the first '"'; base64 needs no
// escapes, so that is the end of the data.
type untilQuote struct {
	r    *bufio.Reader
	done bool
}

func (u *untilQuote) Read(p []byte) (int, error) {
	if u.done {
		return 0, io.EOF
	}
	peek, err := u.r.Peek(min(len(p), u.r.Buffered()+1))
	if i := bytes.IndexByte(peek, '"'); i >= 0 {
		n := copy(p, peek[:i])
		_, _ = u.r.Discard(n + 1)
		u.done = true
		return n, nil
	}
	if len(peek) == 0 && err != nil {
		return 0, io.ErrUnexpectedEOF
	}
	n := copy(p, peek)
	_, _ = u.r.Discard(n)
	return n, nil
}
