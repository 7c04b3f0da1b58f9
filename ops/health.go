package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/ahp-bridge/ahp-bridge/bridge"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// checkTimeout bounds one readiness check, so that a probe gets an answer
// within the orchestrator's probe timeout even if a check hangs.
const checkTimeout = 2 * time.Second

// Check is one condition of readiness.
type Check struct {
	// Name identifies the check in /readyz's answer.
	Name string
	// Ready returns nil when the condition holds, else why not, in words
	// for the operator (never session content).
	Ready func(ctx context.Context) error
}

// Health answers the liveness and readiness probes. Checks can be added
// while it serves (the store's when it is opened).
type Health struct {
	mu     sync.Mutex
	checks []Check
}

// NewHealth returns a Health that is ready when every check is.
func NewHealth(checks ...Check) *Health {
	return &Health{checks: checks}
}

// Add adds a readiness check.
func (h *Health) Add(c Check) {
	h.mu.Lock()
	h.checks = append(h.checks, c)
	h.mu.Unlock()
}

// Reason is one failed readiness check.
type Reason struct {
	Check  string `json:"check"`
	Reason string `json:"reason"`
}

// Readiness runs every check and returns the failed ones, in the order
// the checks were added.
func (h *Health) Readiness(ctx context.Context) []Reason {
	h.mu.Lock()
	checks := append([]Check(nil), h.checks...)
	h.mu.Unlock()
	var out []Reason
	for _, c := range checks {
		cctx, cancel := context.WithTimeout(ctx, checkTimeout)
		err := c.Ready(cctx)
		cancel()
		if err != nil {
			out = append(out, Reason{Check: c.Name, Reason: err.Error()})
		}
	}
	return out
}

// healthBody is the JSON answer of both probes.
type healthBody struct {
	Status  string   `json:"status"`
	Reasons []Reason `json:"reasons,omitempty"`
}

// ServeLive answers the liveness probe: the process serves HTTP.
func (h *Health) ServeLive(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, healthBody{Status: "alive"})
}

// ServeReady answers the readiness probe: 200 when every check passes,
// else 503 with the reasons.
func (h *Health) ServeReady(w http.ResponseWriter, r *http.Request) {
	if reasons := h.Readiness(r.Context()); len(reasons) > 0 {
		writeJSON(w, http.StatusServiceUnavailable, healthBody{Status: "not ready", Reasons: reasons})
		return
	}
	writeJSON(w, http.StatusOK, healthBody{Status: "ready"})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// Flag is a readiness condition the program sets itself, such as "the AHP
// listener is up" (false until it listens, and again once shutdown
// starts).
type Flag struct {
	mu  sync.Mutex
	err error
}

// NewFlag returns a flag that is not ready, for the reason given.
func NewFlag(notReady string) *Flag {
	return &Flag{err: errors.New(notReady)}
}

// Set makes the flag ready (nil) or not (why).
func (f *Flag) Set(err error) {
	f.mu.Lock()
	f.err = err
	f.mu.Unlock()
}

// Check is the flag as a readiness check named name.
func (f *Flag) Check(name string) Check {
	return Check{Name: name, Ready: func(context.Context) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.err
	}}
}

// ProvidersCheck is ready when every configured provider either started
// its agent or has not been needed yet: a provider whose last start
// failed makes its new sessions fail, so the bridge is not ready until a
// start succeeds.
func ProvidersCheck(b *bridge.Bridge) Check {
	return Check{Name: "providers", Ready: func(context.Context) error {
		var errs []error
		for _, p := range b.Providers() {
			r, ok := p.Provider.(interface{ Ready() error })
			if p.Retired || !ok {
				continue
			}
			if err := r.Ready(); err != nil {
				errs = append(errs, fmt.Errorf("provider %s: %w", p.ID, err))
			}
		}
		return errors.Join(errs...)
	}}
}

// StoreCheck is ready while the state store's writes succeed: from a
// failed write until the next successful one, sessions are not being
// kept.
func StoreCheck(s interface{ Health() store.Health }) Check {
	return Check{Name: "store", Ready: func(context.Context) error {
		h := s.Health()
		if !h.Failing {
			return nil
		}
		if h.LastError != nil {
			return fmt.Errorf("state store writes are failing: %w", h.LastError)
		}
		return errors.New("state store writes are failing")
	}}
}
