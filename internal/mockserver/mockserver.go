// Package mockserver holds what the local mocks of model APIs share
// (internal/mockllm, internal/mockgemini, internal/mockopenai): the log of
// the model calls each one decoded, in order, and the empty answer to every
// request it does not model (agents treat telemetry, feature flags and
// account look-ups as optional, so an empty object keeps them going).
package mockserver

import (
	"io"
	"net/http"
	"sync"
)

// Log records the model calls a mock received and the other requests it
// answered empty. Its zero value is ready to use; it is safe for
// concurrent use by the mock's handlers and the test reading it.
type Log[R any] struct {
	mu       sync.Mutex
	requests []R
	other    []string
}

// Add records a model call and returns its number, counting from 1.
func (l *Log[R]) Add(r R) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.requests = append(l.requests, r)
	return len(l.requests)
}

// Update changes the record of call n (as Add numbered it), for what a mock
// learns only once it has answered (e.g. the tokens it reported).
func (l *Log[R]) Update(n int, change func(*R)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n >= 1 && n <= len(l.requests) {
		change(&l.requests[n-1])
	}
}

// Requests returns the model calls received so far, in order.
func (l *Log[R]) Requests() []R {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]R(nil), l.requests...)
}

// Other returns the method and path of every request that was not a model
// call, in order.
func (l *Log[R]) Other() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.other...)
}

// Empty is the handler of every path the mock does not model: it records
// the request and answers an empty JSON object.
func (l *Log[R]) Empty(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	l.mu.Lock()
	l.other = append(l.other, r.Method+" "+r.URL.Path)
	l.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte("{}"))
}
