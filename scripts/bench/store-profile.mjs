// `npm run bench -- --profile SCENARIO --store memory|postgres`: one scenario of the stores part
// (login, profile, insertOne, find of one user's 100 notes among 100,000), on the data the stores
// part seeds, measured from every side at once:
//   - the emulator's CPU per request (its event loop's and its other threads'), and the database's (every process of the throwaway cluster);
//   - latency percentiles (p50, p99, p99.9, max);
//   - with --cpu-prof (the default), where the emulator's time goes (profile-summary.mjs);
//   - with --trace-gc, the emulator's garbage collections (--trace-gc-nvp): pauses per request by
//     kind, the longest, bytes promoted per request, marking in steps and in the background;
//   - with --loop-delay, how long its event loop was blocked (percentiles, the longest);
//   - on PostgreSQL, pg_stat_statements over the measured run: statements per request, their time,
//     rows and buffers; transactions and WAL flushes per request (pg_stat_database, pg_stat_wal).
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { startCluster } from "../postgres-cluster.mjs";
import { runLoad } from "./client.mjs";
import { layout, procTreeCpuSplit, root, threadCpuMs } from "./processes.mjs";
import { summarizeProfile } from "./profile-summary.mjs";
import { pinToServerCore, scenarios, seed, storeClusterSettings } from "./stores.mjs";

const secret = "benchmark-signing-secret-0123456789abcdef";

/** Collects the emulator's `--trace-gc-nvp` lines from its stdout (after it said where it listens). */
function gcTrace(child) {
  const lines = [];
  let rest = "";
  child.stdout.on("data", (chunk) => {
    const text = rest + chunk.toString();
    const parts = text.split("\n");
    rest = parts.pop();
    for (const line of parts) if (/ gc=\S+ /.test(line)) lines.push(line);
  });
  return lines;
}

const gcKinds = { s: "scavenge", mc: "mark-compact", ms: "minor mark-sweep", mmc: "minor mark-compact" };

/**
 * Collections by kind from `--trace-gc-nvp` lines (`name=value` pairs): how many, the main
 * thread's pauses, what the scavenges promoted to the old generation per request (what makes
 * mark-compacts come), and for mark-compacts the marking done in steps on the main thread and in
 * the background (the background's threads share the pinned core with the requests).
 */
function gcSummary(lines, requests) {
  const kinds = new Map();
  for (const line of lines) {
    const field = Object.fromEntries([...line.matchAll(/([\w.]+)=([-\w.]+)/g)].map((m) => [m[1], m[2]]));
    const name = gcKinds[field.gc] ?? field.gc;
    const kind = kinds.get(name) ?? { count: 0, totalMs: 0, maxMs: 0, promoted: 0, incrementalMs: 0, backgroundMs: 0 };
    const pause = Number(field.pause);
    kind.count++;
    kind.totalMs += pause;
    kind.maxMs = Math.max(kind.maxMs, pause);
    kind.promoted += Number(field.promoted ?? 0);
    kind.incrementalMs += Number(field.incremental ?? 0);
    kind.backgroundMs += Number(field["background.mark"] ?? 0);
    kinds.set(name, kind);
  }
  return [...kinds].map(([kind, k]) => ({ kind, ...k, usPerRequest: (1000 * k.totalMs) / Math.max(1, requests) }));
}

async function statistics(client) {
  const [database] = (
    await client.query(
      "SELECT xact_commit::float8 AS commits, blks_hit::float8 AS hit, blks_read::float8 AS read FROM pg_stat_database WHERE datname = current_database()",
    )
  ).rows;
  const [wal] = (
    await client.query(
      "SELECT wal_records::float8 AS records, wal_bytes::float8 AS bytes, wal_sync::float8 AS syncs FROM pg_stat_wal",
    )
  ).rows;
  return { ...database, wal };
}

/** The event-loop delay the preload wrote since the last signal (it appends a line per signal). */
async function loopDelay(pid, file) {
  const lines = () => (existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean) : []);
  const before = lines().length;
  process.kill(pid, "SIGUSR2");
  for (let waited = 0; lines().length === before; waited += 10) {
    if (waited > 10_000) throw new Error("the loop-delay preload did not answer");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return JSON.parse(lines().at(-1));
}

export async function profileStore({
  store,
  ids,
  duration,
  warmup,
  connections,
  cpuProf,
  traceGc,
  loopDelayed,
  nodeArgs: extraNodeArgs = [],
  emulatorArgs = [],
  emulatorProcess,
  log,
}) {
  const dir = join(root, "bench-results", "profiles", `${store}-${ids.join("-")}-${Date.now()}`);
  mkdirSync(dir, { recursive: true });
  const cluster =
    store === "postgres"
      ? await startCluster({
          settings: {
            ...storeClusterSettings,
            shared_preload_libraries: "pg_stat_statements",
            "pg_stat_statements.track": "all",
            "pg_stat_statements.track_planning": "on",
            track_io_timing: "on",
            track_wal_io_timing: "on",
          },
        })
      : null;
  if (cluster) pinToServerCore(cluster.pid());
  const delayFile = join(dir, "loop-delay.jsonl");
  const nodeArgs = [
    ...(cpuProf ? ["--cpu-prof", "--cpu-prof-dir", dir] : []),
    ...(traceGc ? ["--trace-gc-nvp"] : []),
    ...(loopDelayed ? ["--import", join(root, "scripts", "bench", "loop-delay.mjs")] : []),
    ...extraNodeArgs,
  ];
  rmSync(delayFile, { force: true });
  const emulator = await emulatorProcess({
    nodeArgs,
    env: loopDelayed ? { BENCH_LOOP_DELAY_FILE: delayFile } : {},
    args: [...(cluster ? ["--database", cluster.url] : []), "--signing-secret", secret, ...emulatorArgs],
  });
  const gcLines = traceGc ? gcTrace(emulator.child) : [];
  let admin;
  try {
    const list = scenarios(await seed(emulator.url, log, store));
    if (cluster) {
      admin = new pg.Client({ connectionString: cluster.url });
      await admin.connect();
      await admin.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    }
    const out = [];
    const windows = [];
    for (const id of ids) {
      const scenario = list.find((s) => s.id === id);
      if (!scenario) throw new Error(`no stores scenario '${id}' (login, profile, insertOne, find)`);
      const job = {
        url: emulator.url,
        connections,
        requests: [scenario.request],
        ...(scenario.rotate ? { rotate: scenario.rotate } : {}),
      };
      if (warmup > 0) await runLoad({ ...job, duration: warmup });
      if (admin) await admin.query("SELECT pg_stat_statements_reset(), pg_stat_reset_shared('wal'), pg_stat_reset()");
      const before = admin ? await statistics(admin) : null;
      const gcBefore = gcLines.length;
      const none = { user: 0, system: 0 };
      const threadsBefore = threadCpuMs(emulator.pid);
      const cpu = {
        emulator: procTreeCpuSplit(emulator.pid),
        database: cluster ? procTreeCpuSplit(cluster.pid()) : none,
      };
      const startedUs = Number(process.hrtime.bigint() / 1000n);
      if (loopDelayed) await loopDelay(emulator.pid, delayFile);
      const result = await runLoad({ ...job, duration });
      const delay = loopDelayed ? await loopDelay(emulator.pid, delayFile) : null;
      const endedUs = Number(process.hrtime.bigint() / 1000n);
      windows.push([id, startedUs, endedUs]);
      const since = (now, then) => ({ user: now.user - then.user, system: now.system - then.system });
      const threadsAfter = threadCpuMs(emulator.pid);
      const used = {
        emulator: since(procTreeCpuSplit(emulator.pid), cpu.emulator),
        database: since(cluster ? procTreeCpuSplit(cluster.pid()) : none, cpu.database),
      };
      const requests = Math.max(1, result.requests);
      const perRequest = ({ user, system }) =>
        `${((1000 * (user + system)) / requests).toFixed(0)} µs (kernel ${((1000 * system) / requests).toFixed(0)})`;
      const fixed = (n, d = 2) => (Number.isFinite(n) ? n.toFixed(d) : "–");
      out.push(
        "",
        `${store} ${id}: ${Math.round(result.rps)} req/s at ${connections} connections` +
          `${cpuProf ? " (under --cpu-prof)" : ""}; latency p50 ${fixed(result.latency.p50)} ms, p99 ${fixed(result.latency.p99)} ms, ` +
          `p99.9 ${fixed(result.latency.p999)} ms, max ${fixed(result.latency.max)} ms` +
          (result.ok !== result.requests ? ` (${result.requests - result.ok} not 2xx)` : ""),
        `CPU per request: emulator ${perRequest(used.emulator)}` +
          (cluster ? `, database ${perRequest(used.database)}` : "") +
          (layout.pinned ? " (both pinned to one core)" : ""),
        `the emulator's threads per request: ${Object.entries(threadsAfter)
          .map(([kind, ms]) => `${kind} ${((1000 * (ms - threadsBefore[kind])) / requests).toFixed(0)} µs`)
          .join(
            ", ",
          )} (main: the event loop; others: libuv's pool, where password hashes run, and V8's GC and compilers)`,
      );
      if (delay)
        out.push(
          `event loop blocked: p50 ${fixed(delay.p50)} ms, p99 ${fixed(delay.p99)} ms, p99.9 ${fixed(delay.p999)} ms, longest ${fixed(delay.max)} ms` +
            (delay.heldMax === undefined
              ? ""
              : `; the main thread's own CPU between two turns: p99 ${fixed(delay.heldP99)} ms, p99.9 ${fixed(delay.heldP999)} ms, longest ${fixed(delay.heldMax)} ms (the rest of a wait: the host running something else)`),
        );
      if (admin) {
        const after = await statistics(admin);
        // The statistics' own statements (this connection) are left out of the counts.
        const { rows } = await admin.query(
          `SELECT query, calls::float8 AS calls, total_exec_time AS total, total_plan_time AS plan, rows::float8 AS rows,
                  shared_blks_hit::float8 AS hit, shared_blks_read::float8 AS read, wal_records::float8 AS wal
             FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat%' ORDER BY total_exec_time DESC LIMIT 25`,
        );
        const calls = rows.reduce((n, r) => n + r.calls, 0);
        const total = rows.reduce((n, r) => n + r.total, 0);
        const planned = rows.reduce((n, r) => n + r.plan, 0);
        out.push(
          `database: ${(calls / requests).toFixed(2)} statements, ${((after.commits - before.commits) / requests).toFixed(2)} transactions, ` +
            `${((after.wal.syncs - before.wal.syncs) / requests).toFixed(3)} WAL flushes, ${((after.wal.bytes - before.wal.bytes) / requests).toFixed(0)} WAL bytes ` +
            `and ${((1000 * total) / requests).toFixed(0)} µs of statement execution (+ ${((1000 * planned) / requests).toFixed(0)} µs planning) per request`,
          "statements (per request: calls, execution µs; per call: execution + planning µs, rows, buffers hit/read, WAL records):",
        );
        for (const r of rows) {
          out.push(
            `  ${(r.calls / requests).toFixed(2).padStart(6)}  ${((1000 * r.total) / requests).toFixed(0).padStart(5)} µs | ` +
              `${((1000 * r.total) / r.calls).toFixed(0).padStart(5)} + ${((1000 * r.plan) / r.calls).toFixed(0)} µs ${(r.rows / r.calls).toFixed(1).padStart(6)} rows ` +
              `${(r.hit / r.calls).toFixed(1).padStart(6)}/${(r.read / r.calls).toFixed(1)} blks ${(r.wal / r.calls).toFixed(1)} wal | ` +
              r.query.replace(/\s+/g, " ").slice(0, 160),
          );
        }
      }
      if (traceGc) {
        out.push("garbage collection during the measured run (pauses of the main thread):");
        for (const k of gcSummary(gcLines.slice(gcBefore), requests))
          out.push(
            `  ${k.kind.padEnd(18)} ${String(k.count).padStart(5)} ×, ${k.usPerRequest.toFixed(1)} µs of pauses per request, ` +
              `the longest ${k.maxMs.toFixed(1)} ms` +
              (k.promoted > 0 ? `; ${(k.promoted / requests).toFixed(0)} B promoted per request` : "") +
              (k.kind === "mark-compact"
                ? `; marking ${k.incrementalMs.toFixed(0)} ms in steps, ${k.backgroundMs.toFixed(0)} ms in the background`
                : ""),
          );
      }
    }
    await emulator.stop();
    if (cpuProf)
      for (const [id, from, to] of windows)
        out.push("", `where ${id}'s time went:`, summarizeProfile(dir, 30, [from, to]));
    return out.join("\n");
  } finally {
    await admin?.end();
    await emulator.stop();
    await cluster?.stop();
  }
}
