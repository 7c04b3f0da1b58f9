package ops_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/acp"
	"github.com/ahp-bridge/ahp-bridge/ahp/client"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/internal/bridgetest"
	"github.com/ahp-bridge/ahp-bridge/ops"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// get fetches url and returns the status and body.
func get(t *testing.T, url string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(bridgetest.Context(t, 10*time.Second), http.MethodGet, url, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

type readyBody struct {
	Status  string       `json:"status"`
	Reasons []ops.Reason `json:"reasons"`
}

func readiness(t *testing.T, base string) (int, readyBody) {
	t.Helper()
	code, body := get(t, base+"/readyz")
	var rb readyBody
	require.NoError(t, json.Unmarshal([]byte(body), &rb), "body %q", body)
	return code, rb
}

// TestHealthInBothStates: /healthz answers while the process serves;
// /readyz is 503 with the reasons until every check passes, then 200.
func TestHealthInBothStates(t *testing.T) {
	listener := ops.NewFlag("the AHP listener is not up yet")
	var failing atomic.Bool
	failing.Store(true)
	st := storeHealth(func() store.Health {
		if failing.Load() {
			return store.Health{Failing: true, WriteFailures: 1, LastError: errors.New("disk full")}
		}
		return store.Health{WriteFailures: 1}
	})
	h := ops.NewHealth(listener.Check("listener"))
	h.Add(ops.StoreCheck(st))
	srv := httptest.NewServer((&ops.Endpoints{Health: h}).Handler())
	defer srv.Close()

	code, body := get(t, srv.URL+"/healthz")
	assert.Equal(t, http.StatusOK, code)
	assert.JSONEq(t, `{"status":"alive"}`, body)

	code, rb := readiness(t, srv.URL)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "not ready", rb.Status)
	assert.Equal(t, []ops.Reason{
		{Check: "listener", Reason: "the AHP listener is not up yet"},
		{Check: "store", Reason: "state store writes are failing: disk full"},
	}, rb.Reasons)

	listener.Set(nil)
	failing.Store(false)
	code, rb = readiness(t, srv.URL)
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, readyBody{Status: "ready"}, rb)

	listener.Set(errors.New("shutting down"))
	code, rb = readiness(t, srv.URL)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, []ops.Reason{{Check: "listener", Reason: "shutting down"}}, rb.Reasons)
}

type storeHealth func() store.Health

func (f storeHealth) Health() store.Health { return f() }

func scriptProvider(t *testing.T, id string) *acp.Provider {
	return acp.NewProvider(acp.Config{ID: id, Command: []string{bridgetest.ScriptAgent(t)}}, zerolog.Nop())
}

// TestReadinessFollowsTheProviders: a provider whose agent was needed and
// failed to start makes the bridge not ready, naming it; one not needed
// yet does not.
func TestReadinessFollowsTheProviders(t *testing.T) {
	broken := acp.NewProvider(acp.Config{ID: "broken", Command: []string{"/nonexistent/agent"}}, zerolog.Nop())
	env := bridgetest.Start(t, []backend.Provider{scriptProvider(t, "script"), broken}, bridgetest.Options{})
	h := ops.NewHealth(ops.ProvidersCheck(env.Bridge))
	srv := httptest.NewServer((&ops.Endpoints{Health: h}).Handler())
	defer srv.Close()

	code, _ := readiness(t, srv.URL)
	assert.Equal(t, http.StatusOK, code, "no agent has been needed yet")

	c := env.Client(t)
	ch := client.NewSessionURI()
	require.NoError(t, c.CreateSession(bridgetest.Context(t, 30*time.Second), wire.CreateSessionParams{Channel: ch, Provider: wire.Ptr("broken")}))
	_, err := c.Subscribe(bridgetest.Context(t, 10*time.Second), ch)
	require.NoError(t, err)
	_, err = c.WaitFor(bridgetest.Context(t, 30*time.Second), ch, func(s *wire.SessionState) bool {
		return s.Lifecycle == wire.SessionLifecycleFailed
	})
	require.NoError(t, err)

	code, rb := readiness(t, srv.URL)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	require.Len(t, rb.Reasons, 1)
	assert.Equal(t, "providers", rb.Reasons[0].Check)
	assert.Contains(t, rb.Reasons[0].Reason, "provider broken: its agent failed to start")
	assert.NotContains(t, rb.Reasons[0].Reason, ch, "no session data")
}

// scrape fetches and parses the exposition format.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := get(t, url, "Accept", "text/plain")
	require.Equal(t, http.StatusOK, code, body)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	require.NoError(t, err)
	return fams
}

// value returns the value of the series of name whose labels include
// labels (name=value pairs); it fails the test when there is none.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	fam, ok := fams[name]
	require.True(t, ok, "no metric %s", name)
	for _, m := range fam.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		match := true
		for i := 0; i+1 < len(labels); i += 2 {
			if got[labels[i]] != labels[i+1] {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	require.Failf(t, "no series", "%s%v", name, labels)
	return 0
}

// TestMetricsPresentAndMovingAfterAScriptedTurn scrapes /metrics before
// and after a session with a streamed turn and a permission a client
// approves, and checks that every metric is there and the ones the turn
// touches moved.
func TestMetricsPresentAndMovingAfterAScriptedTurn(t *testing.T) {
	env := bridgetest.Start(t, []backend.Provider{scriptProvider(t, "script")}, bridgetest.Options{})
	reg := prometheus.NewRegistry()
	m, err := ops.NewMetrics(reg, env.Host, env.Bridge, "v-test")
	require.NoError(t, err)
	srv := httptest.NewServer(ops.MetricsHandler(reg))
	defer srv.Close()

	before := scrape(t, srv.URL)
	for _, name := range []string{
		"ahp_bridge_sessions", "ahp_bridge_actions_sequenced_total", "ahp_bridge_frames_written_total",
		"ahp_bridge_written_bytes_total", "ahp_bridge_slow_clients_dropped_total", "ahp_bridge_reconnects_total",
		"ahp_bridge_agent_processes_started_total", "ahp_bridge_agent_processes_crashed_total",
		"ahp_bridge_agent_processes_restarted_total", "ahp_bridge_agent_processes_running",
		"ahp_bridge_permission_requests_total", "ahp_bridge_agent_event_write_latency_seconds",
		"ahp_bridge_store_write_duration_seconds", "ahp_bridge_store_write_failures_total", "ahp_bridge_build_info",
	} {
		assert.Contains(t, before, name)
	}
	assert.Zero(t, value(t, before, "ahp_bridge_agent_processes_started_total", "provider", "script"))
	assert.Equal(t, 1.0, value(t, before, "ahp_bridge_build_info", "version", "v-test"))

	c := env.Client(t)
	ch := bridgetest.CreateSession(t, c, "script", t.TempDir())
	// Enough envelopes that the one-in-16 latency sample sees some.
	turn := bridgetest.StartTurn(t, c, ch, "flood 100 32")
	bridgetest.WaitTurnEnd(t, c, ch, turn, time.Minute)
	turn = bridgetest.StartTurn(t, c, ch, "permission")
	tool := bridgetest.WaitPendingTool(t, c, ch, time.Minute)
	_, err = c.ApproveToolCall(bridgetest.Context(t, 10*time.Second), ch, turn, tool, "allow-once")
	require.NoError(t, err)
	bridgetest.WaitTurnEnd(t, c, ch, turn, time.Minute)
	m.ObserveStoreWrite(time.Millisecond, nil)
	m.ObserveStoreWrite(time.Millisecond, errors.New("disk full"))
	require.NoError(t, c.Ping(bridgetest.Context(t, 10*time.Second))) // every frame before its answer is written

	after := scrape(t, srv.URL)
	assert.Equal(t, 1.0, value(t, after, "ahp_bridge_clients", "protocol_version", "1.0.0"))
	assert.Equal(t, 1.0, value(t, after, "ahp_bridge_sessions", "state", "idle"))
	assert.Zero(t, value(t, after, "ahp_bridge_sessions", "state", "working"))
	assert.Equal(t, 2.0, value(t, after, "ahp_bridge_turns_started_total", "provider", "script"))
	assert.Equal(t, 2.0, value(t, after, "ahp_bridge_turns_ended_total", "provider", "script", "outcome", "completed"))
	assert.Zero(t, value(t, after, "ahp_bridge_turns_ended_total", "provider", "script", "outcome", "failed"))
	assert.Equal(t, 1.0, value(t, after, "ahp_bridge_permission_requests_total", "outcome", "approved"))
	assert.Equal(t, 1.0, value(t, after, "ahp_bridge_agent_processes_started_total", "provider", "script"))
	assert.Equal(t, 1.0, value(t, after, "ahp_bridge_agent_processes_running", "provider", "script"))
	assert.Equal(t, 2.0, value(t, after, "ahp_bridge_store_write_duration_seconds"))
	assert.Equal(t, 1.0, value(t, after, "ahp_bridge_store_write_failures_total"))
	for _, name := range []string{"ahp_bridge_actions_sequenced_total", "ahp_bridge_frames_written_total", "ahp_bridge_written_bytes_total"} {
		assert.Greater(t, value(t, after, name), value(t, before, name)+100, "%s moved by the turns' envelopes", name)
	}
	assert.Positive(t, value(t, after, "ahp_bridge_agent_event_write_latency_seconds"), "latency samples were taken")
}

// TestStatusPageShowsSessionAndClientButNoPrompt: the page lists the
// provider with its agent process, the session by title with its
// counters, the client with its version and address, and the last
// errors — and nothing of what was said in the session.
func TestStatusPageShowsSessionAndClientButNoPrompt(t *testing.T) {
	env := bridgetest.Start(t, []backend.Provider{scriptProvider(t, "script")}, bridgetest.Options{})
	errs := ops.NewErrorLog(5)
	log := zerolog.New(errs)
	log.Warn().Str("component", "bridge").Str("provider", "script").Str("prompt", "LEAKED-FIELD").
		Err(errors.New("the agent refused")).Msg("a warning worth seeing")
	srv := httptest.NewServer((&ops.Endpoints{
		Health: ops.NewHealth(),
		Status: ops.NewStatus(env.Host, env.Bridge, errs, "v-test"),
	}).Handler())
	defer srv.Close()

	c := env.Client(t)
	ch := bridgetest.CreateSession(t, c, "script", t.TempDir())
	const secret = "SECRET-PROMPT-7f3a"
	turn := bridgetest.StartTurn(t, c, ch, "echo "+secret)
	ended := bridgetest.WaitTurnEnd(t, c, ch, turn, time.Minute)
	b, err := json.Marshal(ended)
	require.NoError(t, err)
	require.Contains(t, string(b), secret, "the agent echoed the prompt into the session")

	code, page := get(t, srv.URL+"/")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, page, `<meta http-equiv="refresh" content="2">`)
	assert.NotContains(t, page, "<script", "no JavaScript")
	assert.Contains(t, page, "v-test")
	// The provider and its agent process.
	pid := env.Bridge.Providers()[0].Provider.(*acp.Provider).ProcessStats().PID
	require.Positive(t, pid)
	assert.Contains(t, page, "<td>script</td>")
	assert.Contains(t, page, "running")
	assert.Contains(t, page, `<td class="num">`+strconv.Itoa(pid)+`</td>`)
	// The session: its title, state and turns.
	assert.Contains(t, page, "Script session")
	assert.Contains(t, page, "<td>idle</td>")
	// The client: its version and address.
	assert.Contains(t, page, "<td>1.0.0</td>")
	assert.Contains(t, page, "127.0.0.1:")
	// The last errors, without fields that may carry content.
	assert.Contains(t, page, "a warning worth seeing")
	assert.Contains(t, page, "the agent refused")
	assert.NotContains(t, page, "LEAKED-FIELD")
	// Nothing said in the session.
	assert.NotContains(t, page, secret)
	assert.NotContains(t, page, ch, "not even the session's URI")
}

// TestEndpointsOnTheAHPListener: probes need no token, /metrics needs the
// AHP token there, the status page is not served there, and every other
// path goes to the WebSocket endpoint.
func TestEndpointsOnTheAHPListener(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "ahp_bridge_test_total", Help: "A test counter."}))
	e := &ops.Endpoints{Health: ops.NewHealth(), Metrics: ops.MetricsHandler(reg), Status: http.NotFoundHandler()}
	ahp := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ahp "+r.URL.Path) })
	srv := httptest.NewServer(e.WithAHP(ahp, func(r *http.Request) bool { return r.URL.Query().Get("tkn") == "tok" }))
	defer srv.Close()

	code, _ := get(t, srv.URL+"/healthz")
	assert.Equal(t, http.StatusOK, code)
	code, _ = get(t, srv.URL+"/readyz")
	assert.Equal(t, http.StatusOK, code)
	code, _ = get(t, srv.URL+"/metrics")
	assert.Equal(t, http.StatusUnauthorized, code)
	code, body := get(t, srv.URL+"/metrics?tkn=tok")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "ahp_bridge_test_total 0")
	_, body = get(t, srv.URL+"/")
	assert.Equal(t, "ahp /", body, "/ is the WebSocket endpoint there")
	_, body = get(t, srv.URL+"/anything")
	assert.Equal(t, "ahp /anything", body)

	ownSrv := httptest.NewServer(e.Handler())
	defer ownSrv.Close()
	code, _ = get(t, ownSrv.URL+"/metrics")
	assert.Equal(t, http.StatusOK, code, "no token on the ops listener")
	code, _ = get(t, ownSrv.URL+"/nothing-here")
	assert.Equal(t, http.StatusNotFound, code)
}

// TestProfilesOnlyWhenAsked: Go's runtime profiles are served under
// /debug/pprof/ by the ops listener only with Profiles set (serve
// --pprof), and never on the AHP listener, where the path is the
// WebSocket endpoint's.
func TestProfilesOnlyWhenAsked(t *testing.T) {
	ahp := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ahp "+r.URL.Path) })
	for _, profiles := range []bool{false, true} {
		e := &ops.Endpoints{Health: ops.NewHealth(), Profiles: profiles}
		own := httptest.NewServer(e.Handler())
		code, body := get(t, own.URL+"/debug/pprof/")
		if profiles {
			assert.Equal(t, http.StatusOK, code)
			assert.Contains(t, body, "goroutine")
			code, body = get(t, own.URL+"/debug/pprof/heap?debug=1")
			assert.Equal(t, http.StatusOK, code)
			assert.Contains(t, body, "heap profile")
			code, _ = get(t, own.URL+"/debug/pprof/cmdline")
			assert.Equal(t, http.StatusOK, code)
		} else {
			assert.Equal(t, http.StatusNotFound, code, "off by default")
			code, _ = get(t, own.URL+"/debug/pprof/heap")
			assert.Equal(t, http.StatusNotFound, code, "off by default")
		}
		own.Close()

		onAHP := httptest.NewServer(e.WithAHP(ahp, func(*http.Request) bool { return true }))
		_, body = get(t, onAHP.URL+"/debug/pprof/heap")
		assert.Equal(t, "ahp /debug/pprof/heap", body, "never on the AHP listener (profiles %v)", profiles)
		onAHP.Close()
	}
}

// TestErrorLogKeepsTheLastWarnings: only warnings and errors, newest
// first, at most n, with only their message, error, component and
// provider.
func TestErrorLogKeepsTheLastWarnings(t *testing.T) {
	errs := ops.NewErrorLog(3)
	log := zerolog.New(zerolog.MultiLevelWriter(io.Discard, errs)).With().Timestamp().Logger()
	log.Info().Msg("info is not kept")
	for _, m := range []string{"w1", "w2", "w3", "w4"} {
		log.Warn().Str("text", "content").Msg(m)
	}
	log.Error().Str("component", "host").Err(errors.New("boom")).Msg("e1")
	var got []string
	for _, e := range errs.Entries() {
		got = append(got, e.Level+" "+e.Message)
	}
	assert.Equal(t, []string{"error e1", "warn w4", "warn w3"}, got)
	first := errs.Entries()[0]
	assert.Equal(t, "host", first.Component)
	assert.Equal(t, "boom", first.Error)
	assert.False(t, first.Time.IsZero())
	_, err := errs.Write([]byte(`{"level":"debug","message":"not kept"}`))
	require.NoError(t, err)
	_, err = errs.Write([]byte("not json"))
	require.NoError(t, err)
	assert.Len(t, errs.Entries(), 3)
}
