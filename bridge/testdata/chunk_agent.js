// A minimal ACP agent speaking raw newline-delimited JSON-RPC, for the
// bridge's end-to-end tests: every prompt reports one running tool call of
// a custom (ACP v2) kind, streams its content with two
// tool_call_content_chunk updates, and completes it without restating the
// content, so the client sees what the appended chunks add up to.
"use strict";
const readline = require("node:readline");

function send(msg) {
  process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...msg }) + "\n");
}

function update(sessionId, u) {
  send({ method: "session/update", params: { sessionId, update: u } });
}

const rl = readline.createInterface({ input: process.stdin });
rl.on("line", (line) => {
  if (!line.trim()) return;
  const m = JSON.parse(line);
  if (m.id === undefined || !m.method) return;
  switch (m.method) {
    case "initialize":
      send({ id: m.id, result: { protocolVersion: 1, agentCapabilities: {} } });
      break;
    case "session/new":
      send({ id: m.id, result: { sessionId: "chunk-session" } });
      break;
    case "session/prompt": {
      const sid = m.params.sessionId;
      update(sid, { sessionUpdate: "tool_call", toolCallId: "chunky-1", title: "Chunky tool",
        kind: "_chunky", status: "in_progress" });
      for (const part of ["part 1", "part 2"]) {
        update(sid, { sessionUpdate: "tool_call_content_chunk", toolCallId: "chunky-1",
          content: { type: "content", content: { type: "text", text: part } } });
      }
      update(sid, { sessionUpdate: "tool_call_update", toolCallId: "chunky-1", status: "completed" });
      update(sid, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "chunks sent" } });
      send({ id: m.id, result: { stopReason: "end_turn" } });
      break;
    }
    default:
      send({ id: m.id, error: { code: -32601, message: "Method not found: " + m.method } });
  }
});
