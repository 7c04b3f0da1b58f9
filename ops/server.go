package ops

import (
	"net/http"
	"net/http/pprof"
)

// Endpoints are the ops endpoints of one bridge.
type Endpoints struct {
	Health *Health
	// Metrics serves /metrics; nil serves none.
	Metrics http.Handler
	// Status serves the status page; nil serves none.
	Status http.Handler
	// Profiles serves Go's runtime profiles (net/http/pprof) under
	// /debug/pprof/ on the ops listener (`serve --pprof`), never on the
	// AHP listener. Off by default: a profile shows the process's
	// internals and costs CPU while it is taken.
	Profiles bool
}

// Handler serves the ops listener (`serve --ops-listen`): the status page
// at /, /healthz, /readyz and /metrics, without a token. It is meant for
// an address only operators and orchestrators reach.
func (e *Endpoints) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", e.Health.ServeLive)
	mux.HandleFunc("GET /readyz", e.Health.ServeReady)
	if e.Metrics != nil {
		mux.Handle("GET /metrics", e.Metrics)
	}
	if e.Status != nil {
		mux.Handle("GET /{$}", e.Status)
	}
	if e.Profiles {
		// The handlers of net/http/pprof, on this mux rather than the
		// default one its import also registers them on (which nothing
		// here serves).
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// WithAHP serves the ops endpoints on the AHP listener, beside ahp (the
// WebSocket endpoint, which gets every other path): /healthz and /readyz
// without a token (probes carry none, and they reveal no session data),
// /metrics only to a request authorized says presents the connection
// token. The status page is not served there: it is for the ops listener.
func (e *Endpoints) WithAHP(ahp http.Handler, authorized func(*http.Request) bool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", e.Health.ServeLive)
	mux.HandleFunc("GET /readyz", e.Health.ServeReady)
	if e.Metrics != nil {
		mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
			if !authorized(r) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="ahp"`)
				http.Error(w, "unauthorized: /metrics on the AHP listener needs the connection token (tkn query parameter or Authorization: Bearer)", http.StatusUnauthorized)
				return
			}
			e.Metrics.ServeHTTP(w, r)
		})
	}
	mux.Handle("/", ahp)
	return mux
}
