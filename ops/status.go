package ops

import (
	"bytes"
	"html/template"
	"net/http"
	"time"

	"github.com/ahp-bridge/ahp-bridge/ahp/host"
	"github.com/ahp-bridge/ahp-bridge/bridge"
)

// Status renders the status page: providers and their agent processes,
// sessions, connected clients and the last errors. It shows titles and
// counters, never a session's content.
type Status struct {
	h       *host.Host
	b       *bridge.Bridge
	errs    *ErrorLog // may be nil
	version string
	started time.Time
	now     func() time.Time
	tmpl    *template.Template
}

// NewStatus returns the status page of a bridge. errs may be nil.
func NewStatus(h *host.Host, b *bridge.Bridge, errs *ErrorLog, version string) *Status {
	return &Status{h: h, b: b, errs: errs, version: version, started: time.Now(), now: time.Now,
		tmpl: template.Must(template.New("status").Funcs(template.FuncMap{"ago": ago, "since": since}).Parse(statusHTML))}
}

// statusPage is what the template shows.
type statusPage struct {
	Version   string
	Now       time.Time
	Uptime    string
	ServerSeq int64
	Providers []providerRow
	Sessions  []host.SessionInfo
	Clients   []host.ClientInfo
	Errors    []ErrorEntry
}

type providerRow struct {
	ID, DisplayName string
	Kind            string
	Retired         bool
	Sessions        int
	// For an ACP provider: its agent process.
	Process          bool
	Running          bool
	PID              int
	StartedAt        time.Time
	Starts, Restarts int64
	Crashes          int64
	LastStartError   string
}

// ServeHTTP renders the page.
func (s *Status) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := s.now()
	page := statusPage{
		Version:   s.version,
		Now:       now,
		Uptime:    since(now, s.started),
		ServerSeq: s.h.Stats().ServerSeq,
		Sessions:  s.h.Sessions(),
		Clients:   s.h.Clients(),
	}
	for _, p := range s.b.Providers() {
		row := providerRow{ID: p.ID, DisplayName: p.DisplayName, Retired: p.Retired, Sessions: p.Sessions, Kind: "agent-channel"}
		if ps, ok := processStats(p.Provider); ok {
			row.Kind, row.Process = "ACP", true
			row.Running, row.PID, row.StartedAt = ps.Running, ps.PID, ps.StartedAt
			row.Starts, row.Restarts, row.Crashes = ps.Starts, ps.Restarts, ps.Crashes
			row.LastStartError = clip(firstLine(ps.LastStartError))
		}
		page.Providers = append(page.Providers, row)
	}
	if s.errs != nil {
		page.Errors = s.errs.Entries()
	}
	var buf bytes.Buffer
	if err := s.tmpl.Execute(&buf, page); err != nil {
		http.Error(w, "rendering the status page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(buf.Bytes())
}

func firstLine(s string) string {
	for i := range len(s) {
		if s[i] == '\n' {
			return s[:i]
		}
	}
	return s
}

// ago says how long before now t was, to the second; "" for the zero time.
func ago(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return now.Sub(t).Round(time.Second).String() + " ago"
}

// since is the time from t to now, to the second.
func since(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return now.Sub(t).Round(time.Second).String()
}

// statusHTML refreshes itself every 2 s with a meta tag: no script at all.
const statusHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="refresh" content="2">
<title>ahp-bridge status</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.3em; margin-bottom: 0.2em; }
h2 { font-size: 1.1em; margin-top: 1.5em; }
table { border-collapse: collapse; }
th, td { text-align: left; padding: 0.2em 0.8em 0.2em 0; border-bottom: 1px solid #ddd; vertical-align: top; }
th { font-weight: 600; }
.num { text-align: right; }
.muted { color: #777; }
.bad { color: #a00; }
</style>
</head>
<body>
<h1>ahp-bridge</h1>
<p class="muted">{{.Version}} · up {{.Uptime}} · serverSeq {{.ServerSeq}} · {{.Now.UTC.Format "2006-01-02 15:04:05 UTC"}}</p>

<h2>Providers</h2>
{{if .Providers}}<table>
<tr><th>id</th><th>name</th><th>kind</th><th>agent process</th><th class="num">pid</th><th>uptime</th><th class="num">starts</th><th class="num">restarts</th><th class="num">crashes</th><th class="num">sessions</th></tr>
{{range .Providers}}<tr>
<td>{{.ID}}{{if .Retired}} <span class="muted">(removed; serving its last sessions)</span>{{end}}</td>
<td>{{.DisplayName}}</td>
<td>{{.Kind}}</td>
{{if .Process}}<td>{{if .Running}}running{{else if .LastStartError}}<span class="bad">failed to start: {{.LastStartError}}</span>{{else if .Starts}}exited; restarts on next use{{else}}not started yet{{end}}</td>
<td class="num">{{if .Running}}{{.PID}}{{end}}</td><td>{{if .Running}}{{since $.Now .StartedAt}}{{end}}</td>
<td class="num">{{.Starts}}</td><td class="num">{{.Restarts}}</td><td class="num">{{.Crashes}}</td>
{{else}}<td class="muted">one connection per session</td><td></td><td></td><td></td><td></td><td></td>{{end}}
<td class="num">{{.Sessions}}</td>
</tr>
{{end}}</table>{{else}}<p class="muted">none configured</p>{{end}}

<h2>Sessions</h2>
{{if .Sessions}}<table>
<tr><th>title</th><th>state</th><th>provider</th><th class="num">clients</th><th class="num">turns</th><th>last activity</th></tr>
{{range .Sessions}}<tr>
<td>{{if .Title}}{{.Title}}{{else}}<span class="muted">(untitled)</span>{{end}}</td>
<td>{{.State}}</td><td>{{.Provider}}</td>
<td class="num">{{.Clients}}</td><td class="num">{{.Turns}}</td>
<td>{{ago $.Now .LastActivity}}</td>
</tr>
{{end}}</table>{{else}}<p class="muted">none</p>{{end}}

<h2>Connected clients</h2>
{{if .Clients}}<table>
<tr><th class="num">connection</th><th>protocol version</th><th>address</th><th class="num">queued frames</th><th class="num">subscriptions</th></tr>
{{range .Clients}}<tr>
<td class="num">{{.Conn}}</td>
<td>{{if .ProtocolVersion}}{{.ProtocolVersion}}{{else}}<span class="muted">not initialized</span>{{end}}</td>
<td>{{if .RemoteAddr}}{{.RemoteAddr}}{{else}}<span class="muted">stdio</span>{{end}}</td>
<td class="num">{{.QueueDepth}}</td><td class="num">{{.Subscriptions}}</td>
</tr>
{{end}}</table>{{else}}<p class="muted">none</p>{{end}}

<h2>Last errors</h2>
{{if .Errors}}<table>
<tr><th>when</th><th>level</th><th>where</th><th>what</th></tr>
{{range .Errors}}<tr>
<td>{{ago $.Now .Time}}</td><td>{{.Level}}</td>
<td>{{.Component}}{{if .Provider}} {{.Provider}}{{end}}</td>
<td>{{.Message}}{{if .Error}}: <span class="bad">{{.Error}}</span>{{end}}</td>
</tr>
{{end}}</table>{{else}}<p class="muted">none</p>{{end}}
</body>
</html>
`
