package scriptagent

import (
	"encoding/json"
	"strconv"
	"time"
)

// BenchStampPrefix marks the write time embedded in every chunk of the
// "bench" scenario: the prefix is followed by the wall-clock time in Unix
// nanoseconds as exactly BenchStampDigits digits. A reader on the same
// machine subtracts it from its own clock on receipt to get the latency.
const (
	BenchStampPrefix = "T"
	BenchStampDigits = 19
)

// benchMinSize is the smallest bench chunk: the stamp, '#', the index.
const benchMinSize = len(BenchStampPrefix) + BenchStampDigits + 1 + 8

// BenchChunkSize is the size of chunk i of a bench flood whose chunks are
// size to maxSize bytes (prompt "bench N SIZE RATE TOOLEVERY PERMEVERY
// MAXSIZE"): spread over that range by a fixed hash of i, so that every
// reader can check a chunk's exact length. With maxSize <= size every chunk
// is size bytes. Neither is raised to the stamp's length here.
func BenchChunkSize(i, size, maxSize int) int {
	if maxSize <= size {
		return size
	}
	h := uint32(i) * 2654435761 // Knuth's multiplicative hash
	return size + int(h>>8)%(maxSize-size+1)
}

// benchFlood plays "bench N SIZE [RATE] [TOOLEVERY] [PERMEVERY] [MAXSIZE]":
// N agent_message_chunks of SIZE bytes, each "T<19-digit UnixNano>#<8-digit
// index>" padded with 'x'; with MAXSIZE > SIZE, chunk i is
// BenchChunkSize(i, SIZE, MAXSIZE) bytes instead. No chunk is shorter than
// its stamp (benchMinSize). RATE > 0
// paces the chunks at RATE per second (0: as fast as the reader takes
// them). TOOLEVERY > 0 adds, after every TOOLEVERY-th chunk, a tool_call
// (pending) and a tool_call_update (completed, one text content block) so
// the mapping's tool path is exercised too; PERMEVERY > 0 makes every
// PERMEVERY-th of those tool calls ask the client's permission
// (session/request_permission, allow or reject) before it completes, the
// stream waiting for the answer as a real agent's turn does (the pace
// resumes from the answer, without a burst to catch up). Lines are built by
// hand rather than with encoding/json so that the agent is never the
// bottleneck being measured; the stamp is taken just before the line is
// written.
func (t *turn) benchFlood(fields []string) (string, bool, error) {
	n, size := intArg(fields, 1, 1000), intArg(fields, 2, 64)
	rate, toolEvery := intArg(fields, 3, 0), intArg(fields, 4, 0)
	permEvery, maxSize := intArg(fields, 5, 0), intArg(fields, 6, 0)
	maxSize = max(maxSize, size, benchMinSize)
	sid, err := json.Marshal(t.s.id)
	if err != nil {
		return "", false, err
	}
	head := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":` + string(sid) +
		`,"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"`
	const tail = `"}}}}` + "\n"
	line := make([]byte, 0, len(head)+maxSize+len(tail))
	start := time.Now()
	tools := 0
	for i := 0; i < n; i++ {
		if t.ctx.Err() != nil {
			return "cancelled", false, nil
		}
		if rate > 0 {
			due := start.Add(time.Duration(int64(i) * int64(time.Second) / int64(rate)))
			if d := time.Until(due); d > 0 {
				time.Sleep(d)
			}
		}
		line = append(line[:0], head...)
		line = append(line, BenchStampPrefix...)
		line = appendPadded(line, time.Now().UnixNano(), BenchStampDigits)
		line = append(line, '#')
		line = appendPadded(line, int64(i), 8)
		for j, sz := benchMinSize, BenchChunkSize(i, size, maxSize); j < sz; j++ { // nothing below the stamp
			line = append(line, 'x')
		}
		line = append(line, tail...)
		t.a.writeRaw(line)
		if toolEvery > 0 && (i+1)%toolEvery == 0 {
			id := "bench-tool-" + strconv.Itoa(i+1)
			tc := map[string]any{"toolCallId": id, "title": "Read bench.txt", "kind": "read", "status": "pending"}
			t.update(merge(map[string]any{"sessionUpdate": "tool_call"}, tc))
			if tools++; permEvery > 0 && tools%permEvery == 0 {
				asked := time.Now()
				if _, err := t.permission(tc, []any{
					map[string]any{"optionId": "allow", "name": "Allow", "kind": "allow_once"},
					map[string]any{"optionId": "reject", "name": "Reject", "kind": "reject_once"},
				}); err != nil {
					return "", false, err
				}
				start = start.Add(time.Since(asked)) // resume the pace, no burst
			}
			t.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": id, "status": "completed",
				"content": []any{map[string]any{"type": "content", "content": map[string]any{"type": "text", "text": "read " + id}}}})
		}
	}
	return "end_turn", false, nil
}

// appendPadded appends v in decimal, left-padded with zeros to width.
func appendPadded(b []byte, v int64, width int) []byte {
	var tmp [20]byte
	s := strconv.AppendInt(tmp[:0], v, 10)
	for k := len(s); k < width; k++ {
		b = append(b, '0')
	}
	return append(b, s...)
}
