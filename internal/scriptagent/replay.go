package scriptagent

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// ReplayEnv names the replay file cmd/scriptagent plays instead of the
// scripted scenarios when it is set (see Replay).
const ReplayEnv = "SCRIPTAGENT_REPLAY"

// A replay file (acp/testdata/replay/*.jsonl) is what a real agent sent,
// frame by frame, with the steps that wait for the client in between. Each
// line is one step; lines starting with "//" and blank lines are comments.
// A step is a JSON object with one of:
//
//	{"recv": METHOD, "where": {PARAM: VALUE...}, "as": NAME}
//	    wait for the client's request or notification METHOD whose params
//	    have these top-level values; remember it as NAME
//	{"respond": NAME, "result": {...}} or {"respond": NAME, "error": {...}}
//	    answer the request remembered as NAME
//	{"send": FRAME, "as": NAME, "until": PATH}
//	    write FRAME; a request (with "id" and "method") given "as" waits for
//	    the client's response, remembered as NAME; with "until", the request
//	    is sent again (every untilPause) until the response's value at PATH
//	    is neither null nor empty, as an agent polls terminal/output
//	{"stderr": TEXT, "repeat": N}
//	    write TEXT (with "%d" replaced by 1..N when repeat is given) to stderr
//	{"exit": CODE}
//	    exit at once with CODE
//
// Strings in the frames may refer to what was remembered: "${NAME.a.b}"
// alone is the JSON value at that path (null when there is none), and
// within a longer string it is interpolated as text. After the last step the
// agent answers every request "method not found" until its input ends.

// Replay plays the replay file at path as an ACP agent on in and out,
// writing its "stderr" steps to errOut. An "exit" step ends the process,
// so Replay is for an agent process of its own (cmd/scriptagent with
// SCRIPTAGENT_REPLAY set, or a test binary re-run as the agent).
func Replay(path string, in io.Reader, out, errOut io.Writer) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var steps []map[string]json.RawMessage
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "//") {
			continue
		}
		var st map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &st); err != nil {
			return fmt.Errorf("%s:%d: %w", path, i+1, err)
		}
		steps = append(steps, st)
	}
	r := &replayer{vars: map[string]any{}, responses: map[string]chan map[string]any{}, out: bufio.NewWriter(out), errOut: errOut}
	r.cond = sync.NewCond(&r.mu)
	go r.read(in)
	for i, st := range steps {
		if err := r.step(st); err != nil {
			return fmt.Errorf("%s step %d: %w", filepath.Base(path), i+1, err)
		}
	}
	// Answer whatever else comes until the client closes our input.
	for {
		m, ok := r.next(func(map[string]any) bool { return true })
		if !ok {
			return nil
		}
		if id, has := m["id"]; has {
			r.write(map[string]any{"jsonrpc": "2.0", "id": id,
				"error": map[string]any{"code": -32601, "message": fmt.Sprintf("%q: %v", "Method not found", m["method"])}})
		}
	}
}

type replayer struct {
	mu        sync.Mutex
	cond      *sync.Cond
	inbox     []map[string]any // the client's requests and notifications, not yet received
	eof       bool
	responses map[string]chan map[string]any // our requests' ids → their response
	vars      map[string]any
	wmu       sync.Mutex
	out       *bufio.Writer
	errOut    io.Writer
}

func (r *replayer) read(in io.Reader) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		r.mu.Lock()
		if _, isReq := m["method"]; !isReq {
			key, _ := json.Marshal(m["id"])
			if ch := r.responses[string(key)]; ch != nil {
				delete(r.responses, string(key))
				ch <- m
			}
		} else {
			r.inbox = append(r.inbox, m)
			r.cond.Broadcast()
		}
		r.mu.Unlock()
	}
	r.mu.Lock()
	r.eof = true
	r.cond.Broadcast()
	r.mu.Unlock()
}

// next takes the first message of the inbox that match accepts, waiting
// for one; false when the input ended first.
func (r *replayer) next(match func(map[string]any) bool) (map[string]any, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		for i, m := range r.inbox {
			if match(m) {
				r.inbox = append(r.inbox[:i], r.inbox[i+1:]...)
				return m, true
			}
		}
		if r.eof {
			return nil, false
		}
		r.cond.Wait()
	}
}

func (r *replayer) write(m any) {
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	r.wmu.Lock()
	defer r.wmu.Unlock()
	_, _ = r.out.Write(append(b, '\n'))
	_ = r.out.Flush()
}

func (r *replayer) step(st map[string]json.RawMessage) error {
	str := func(k string) string {
		var s string
		_ = json.Unmarshal(st[k], &s)
		return s
	}
	value := func(k string) (any, error) {
		var v any
		if err := json.Unmarshal(st[k], &v); err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		return r.subst(v), nil
	}
	switch {
	case st["recv"] != nil:
		method := str("recv")
		var where map[string]any
		if st["where"] != nil {
			w, err := value("where")
			if err != nil {
				return err
			}
			where, _ = w.(map[string]any)
		}
		m, ok := r.next(func(m map[string]any) bool {
			if m["method"] != method {
				return false
			}
			params, _ := m["params"].(map[string]any)
			for k, v := range where {
				if fmt.Sprint(params[k]) != fmt.Sprint(v) {
					return false
				}
			}
			return true
		})
		if !ok {
			return fmt.Errorf("the input ended while waiting for %s", method)
		}
		if name := str("as"); name != "" {
			r.vars[name] = m
		}
	case st["respond"] != nil:
		req, _ := r.vars[str("respond")].(map[string]any)
		if req == nil {
			return fmt.Errorf("nothing received as %q", str("respond"))
		}
		msg := map[string]any{"jsonrpc": "2.0", "id": req["id"]}
		if st["error"] != nil {
			e, err := value("error")
			if err != nil {
				return err
			}
			msg["error"] = e
		} else {
			res, err := value("result")
			if err != nil {
				return err
			}
			msg["result"] = res
		}
		r.write(msg)
	case st["send"] != nil:
		f, err := value("send")
		if err != nil {
			return err
		}
		frame, _ := f.(map[string]any)
		name := str("as")
		if name == "" || frame["method"] == nil || frame["id"] == nil {
			r.write(frame)
			return nil
		}
		until := str("until")
		for tries := 0; ; tries++ {
			key, _ := json.Marshal(frame["id"])
			ch := make(chan map[string]any, 1)
			r.mu.Lock()
			r.responses[string(key)] = ch
			r.mu.Unlock()
			r.write(frame)
			r.vars[name] = <-ch
			if until == "" || !empty(r.lookup(name+"."+until)) {
				break
			}
			if tries == untilTries {
				return fmt.Errorf("%s.%s stayed empty after %d tries", name, until, tries+1)
			}
			time.Sleep(untilPause)
		}
	case st["stderr"] != nil:
		text := str("stderr")
		var n int
		_ = json.Unmarshal(st["repeat"], &n)
		if n == 0 {
			fmt.Fprintln(r.errOut, text)
		}
		for i := 1; i <= n; i++ {
			fmt.Fprintf(r.errOut, text+"\n", i)
		}
	case st["exit"] != nil:
		var code int
		_ = json.Unmarshal(st["exit"], &code)
		os.Exit(code)
	default:
		return errors.New("unknown step")
	}
	return nil
}

// untilPause and untilTries pace and bound an "until" step's polling (10 s).
const (
	untilPause = 10 * time.Millisecond
	untilTries = 1000
)

// empty reports whether a remembered value is null or an empty string,
// object or array.
func empty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

var replayRef = regexp.MustCompile(`\$\{([A-Za-z0-9_.]+)\}`)

// subst replaces the references to remembered messages in v.
func (r *replayer) subst(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = r.subst(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = r.subst(e)
		}
		return out
	case string:
		if m := replayRef.FindStringSubmatch(x); m != nil && m[0] == x {
			return r.lookup(m[1])
		}
		return replayRef.ReplaceAllStringFunc(x, func(ref string) string {
			v := r.lookup(replayRef.FindStringSubmatch(ref)[1])
			if s, ok := v.(string); ok {
				return s
			}
			b, _ := json.Marshal(v)
			return string(b)
		})
	}
	return v
}

func (r *replayer) lookup(path string) any {
	parts := strings.Split(path, ".")
	var cur any = r.vars[parts[0]]
	for _, p := range parts[1:] {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}
