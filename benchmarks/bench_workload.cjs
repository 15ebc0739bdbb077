// The shared benchmark workload on the JavaScript original (run by `tool-call-closure bench`).
//
//   node bench_workload.cjs INDEX_CJS N ROUNDS WARMUP SETTLE_SECONDS [PHASE_ROUNDS]
//
// lifecycle: WARMUP untimed rounds, then ROUNDS timed rounds of
//   begin N calls {id: "call_<i>", name: "tool_<i % 7>"};
//   succeed every call whose index is not a multiple of 10 with {i, ok: true, text: "x" * 64};
//   close {status: "cancelled", code: "timeout", message: "deadline"};
//   export the closed snapshot to all three provider formats.
// settle loop: for SETTLE_SECONDS, begin the same N calls and succeed each once with "ok".
// phases (with PHASE_ROUNDS > 0): PHASE_ROUNDS more lifecycle rounds, with the clock read between the
//   operations, as `lifecycle_phases` in bench.py reads it: seconds per round in each operation.
// Written as ../shared/bench/js_seed_bench.cjs writes it (ids built in the loop), so both sides do the same work.
// Prints one JSON line: {N, rounds_per_s, calls_per_s, settle_loop_calls_per_s[, phases]}.
//
//   node bench_workload.cjs INDEX_CJS --serve
//
// slices (benchmarks/interleaved.py): reads one JSON line per slice, {kind: "settle" | "lifecycle", n, seconds},
//   runs whole settle-loop or lifecycle rounds of that N for at least SECONDS on the closure it keeps for that
//   kind and N, and answers one JSON line {calls, seconds}; exits when its input ends.
'use strict';
// One round of each workload on closure c with the announced calls batch (N = n): both modes run these.
function lifecycleRound(c, batch, n) {
  const { handle } = c.begin(batch);
  for (let i = 0; i < n; i++) if (i % 10) c.succeed(handle, `call_${i}`, { i, ok: true, text: 'x'.repeat(64) });
  const s = c.close(handle, { status: 'cancelled', code: 'timeout', message: 'deadline' });
  c.toOpenAIChatCompletions(s); c.toOpenAIResponses(s); c.toAnthropicToolResults(s);
}
function settleRound(c, batch, n) {
  const { handle } = c.begin(batch);
  for (let i = 0; i < n; i++) c.succeed(handle, `call_${i}`, 'ok');
}
function serve(index) {
  const { createToolCallClosure } = require(index);
  const kept = new Map(); // kind/N -> [closure, calls]: one per kind and N, kept across slices
  const lines = require('readline').createInterface({ input: process.stdin });
  lines.on('line', (line) => {
    const { kind, n, seconds } = JSON.parse(line);
    const key = `${kind}/${n}`;
    if (!kept.has(key)) {
      kept.set(key, [createToolCallClosure(), Array.from({ length: n }, (_, i) => ({ id: `call_${i}`, name: `tool_${i % 7}` }))]);
    }
    const [c, batch] = kept.get(key);
    let done = 0;
    const t = process.hrtime.bigint();
    const oneRound = kind === 'settle' ? settleRound : lifecycleRound;
    do {
      oneRound(c, batch, n);
      done += n;
    } while (Number(process.hrtime.bigint() - t) < seconds * 1e9);
    console.log(JSON.stringify({ calls: done, seconds: Number(process.hrtime.bigint() - t) / 1e9 }));
  });
}
if (process.argv[3] === '--serve') serve(process.argv[2]);
else oneRun();
function oneRun() {
  const [index, nArg, roundsArg, warmupArg, secondsArg, phaseRoundsArg] = process.argv.slice(2);
  const { createToolCallClosure } = require(index);
  const N = Number(nArg), ROUNDS = Number(roundsArg), WARMUP = Number(warmupArg), SECONDS = Number(secondsArg);
  const PHASE_ROUNDS = Number(phaseRoundsArg || 0);
  const calls = Array.from({ length: N }, (_, i) => ({ id: `call_${i}`, name: `tool_${i % 7}` }));
  const c = createToolCallClosure();
  for (let i = 0; i < WARMUP; i++) lifecycleRound(c, calls, N);
  let t = process.hrtime.bigint();
  for (let i = 0; i < ROUNDS; i++) lifecycleRound(c, calls, N);
  const secs = Number(process.hrtime.bigint() - t) / 1e9;
  t = process.hrtime.bigint();
  let settles = 0;
  while (Number(process.hrtime.bigint() - t) < SECONDS * 1e9) {
    settleRound(c, calls, N);
    settles += N;
  }
  const s2 = Number(process.hrtime.bigint() - t) / 1e9;
  const result = { N, rounds_per_s: ROUNDS / secs, calls_per_s: (ROUNDS * N) / secs, settle_loop_calls_per_s: settles / s2 };
  if (PHASE_ROUNDS > 0) {
    const names = ['begin', 'succeed', 'close', 'to_openai_chat_completions', 'to_openai_responses', 'to_anthropic_tool_results'];
    const spent = names.map(() => 0n);
    const d = createToolCallClosure();
    for (let r = 0; r < WARMUP + PHASE_ROUNDS; r++) {
      const t0 = process.hrtime.bigint();
      const { handle } = d.begin(calls);
      const t1 = process.hrtime.bigint();
      for (let i = 0; i < N; i++) if (i % 10) d.succeed(handle, `call_${i}`, { i, ok: true, text: 'x'.repeat(64) });
      const t2 = process.hrtime.bigint();
      const s = d.close(handle, { status: 'cancelled', code: 'timeout', message: 'deadline' });
      const t3 = process.hrtime.bigint();
      d.toOpenAIChatCompletions(s);
      const t4 = process.hrtime.bigint();
      d.toOpenAIResponses(s);
      const t5 = process.hrtime.bigint();
      d.toAnthropicToolResults(s);
      const t6 = process.hrtime.bigint();
      if (r >= WARMUP) [t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5].forEach((ns, k) => { spent[k] += ns; });
    }
    result.phases = Object.fromEntries(names.map((name, k) => [name, Number(spent[k]) / PHASE_ROUNDS / 1e9]));
  }
  console.log(JSON.stringify(result));
}
