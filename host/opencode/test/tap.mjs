// TAP output for every JavaScript test here (harness.mjs, tui_state.mjs, the
// e2e suites through e2e_lib.mjs): one numbered `ok`/`not ok` line per check,
// what was seen after a failure as `#` lines, the plan and a summary at the end.
// Under node and under OpenCode's Bun (harness.mjs runs in both).
import assert from "node:assert";

const T0 = Date.now();
export const secs = () => ((Date.now() - T0) / 1000).toFixed(1);
export const tap = { n: 0, failed: 0 };

// One check: cond true is `ok`. On failure `extra` (what was seen) follows as
// JSON, cut at 1500 characters. Returns whether it passed.
export function ok(cond, name, extra) {
  tap.n++;
  if (!cond) tap.failed++;
  console.log(`${cond ? "ok" : "not ok"} ${tap.n} - ${name}`);
  if (!cond && extra !== undefined) console.log(`# got: ${JSON.stringify(extra)?.slice(0, 1500)}`);
  return !!cond;
}

// One check that got equals want, deeply and strictly (node:assert's
// deepStrictEqual: keys in any order, types exact). On failure assert's own
// message, which shows the difference, follows as `#` lines.
export function eq(got, want, name) {
  try {
    assert.deepStrictEqual(got, want);
  } catch (e) {
    if (!(e instanceof assert.AssertionError)) throw e;
    ok(false, name);
    for (const line of e.message.split("\n").slice(0, 40)) console.log(`# ${line}`);
    return false;
  }
  return ok(true, name);
}

export const diag = (s) => console.log(`# [${secs()}s] ${s}`);

// The plan line and a summary: `1..N`, `# what: P passed, F failed in S s`.
// Returns the exit status the suite should end with (1 when a check failed).
export function summary(what) {
  console.log(`1..${tap.n}`);
  console.log(`# ${what}: ${tap.n - tap.failed} passed, ${tap.failed} failed in ${secs()} s`);
  return tap.failed ? 1 : 0;
}
