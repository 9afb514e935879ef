// The loopback floor of ocbg's notification in `opencode serve`, without OpenCode: in OpenCode's own
// Bun (BUN_BE_BUN=1 opencode loopback_floor.mjs), a node:http server (as OpenCode's is) and the
// global fetch (as the plugins' HTTP client uses) in one process, the thread otherwise idle; a
// prompt_async-like POST of a 400-character text, 200 times (the first 10 left out). Prints
// `cmptui_loopback_fetch_to_server_ms` (fetch called → the server emitting the request) and
// `cmptui_loopback_round_trip_ms` (→ the 204 back), medians. e2e_compare_tui.mjs runs it.
import http from "node:http";

const now = () => performance.now();
let sent = 0;
const toServer = [], roundTrip = [];
const server = http.createServer((req, res) => {
  toServer.push(now() - sent);
  req.on("data", () => {});
  req.on("end", () => { res.writeHead(204); res.end(); });
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const url = `http://127.0.0.1:${server.address().port}/session/ses_floor/prompt_async`;
const body = JSON.stringify({ parts: [{ type: "text", text: "x".repeat(400) }] });
for (let i = 0; i < 200; i++) {
  sent = now();
  const res = await fetch(new Request(url, { method: "POST", body, headers: { "content-type": "application/json" } }));
  if (res.status !== 204) throw new Error(`loopback floor: HTTP ${res.status}`);
  roundTrip.push(now() - sent);
  await new Promise((r) => setTimeout(r, 5));
}
server.close();
const median = (xs) => { const s = xs.slice(10).sort((a, b) => a - b); return s[s.length >> 1].toFixed(2); };
const runtime = typeof Bun === "undefined" ? `node ${process.version}` : `Bun ${Bun.version}`;
console.log(`cmptui_loopback_fetch_to_server_ms: ${median(toServer)} ms (median of 190, ${runtime}, the thread idle)`);
console.log(`cmptui_loopback_round_trip_ms: ${median(roundTrip)} ms (median of 190, ${runtime}, the thread idle)`);
