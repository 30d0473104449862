#!/usr/bin/env node
// `npm run bench`: measures the emulator against its targets and writes docs/benchmarks.md (the
// generated section between the `bench:` markers; the hand-written analysis around it is kept).
//
//   throughput  a bare node:http server answering the same bytes (the practical limit) and the
//               emulator, side by side, per scenario; server pinned to one core, autocannon (50
//               connections) to the other; several interleaved rounds; medians
//   start       `node mock-server/dist/cli.js` spawned → first HTTP answer: alone, with kept state and
//               a --config file as `npm start` runs it, and `npm run mock`
//   scale       memory per user with 100,000 users; profile latency at 100,000 users vs 1,000
//   stores      bare server, in-memory store and PostgreSQL store side by side (login, profile,
//               insertOne, find of one user's 100 notes among 100,000), on a throwaway cluster
//
// Options: --rounds N (5) --duration S (5) --warmup S (1) --connections N (50) --users N (100000)
//          --starts N (10) --only throughput,start,scale,stores --scenarios profile,sum,… (the stores part's too:
//          login, profile, insertOne, find, login*, …) --no-write --json FILE
//          --help (this text)
//          --profile SCENARIO  (run one scenario under --cpu-prof and print where the time goes)
//          --store memory|postgres  (with --profile: scenarios (comma-separated) of the stores part — login, profile, insertOne,
//                           find — on that store and its seeded data; on PostgreSQL with pg_stat_statements:
//                           statements, transactions and WAL flushes per request, and the database's CPU)
//          --trace-gc  (with --profile: the emulator's garbage collections during the measured run)
//          --loop-delay  (with --profile --store: how long the emulator's event loop was blocked, and how much
//                         of that the main thread's own CPU time)
//          --node-args="…"  (with --profile --store: more options for the emulator's node, e.g. --trace-gc-nvp)
//          --emulator-args="…"  (with --profile --store: more options for the emulator, e.g. --database-pool 10)
//          --no-cpu-prof  (with --profile: without the CPU profiler, for undisturbed latencies)
//          --cli FILE  (measure another build of the emulator, e.g. an older commit's, for before/after)
//          --against FILE  (throughput only: another build measured in the same rounds, interleaved with
//                           this one and the bare server: an A/B on one host in one sitting; writes no report.
//                           FILE: another commit's mock-server/dist copied to mock-server/dist-NAME, so that
//                           it finds the default app beside it, and ignored by git: dist-NAME/cli.js)
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import {
  anonymousLogin,
  appServices,
  callJson,
  loginScenario,
  median,
  probe,
  probeArgs,
  runLoad,
} from "./bench/client.mjs";
import {
  buildEmulator,
  cli,
  freePort,
  layout,
  listeningUrl,
  machine,
  procMemory,
  procTreeCpuMs,
  root,
  spawnNode,
  startEmulator,
  stop,
} from "./bench/processes.mjs";
import { summarizeProfile } from "./bench/profile-summary.mjs";
import { writeReport } from "./bench/report.mjs";
import { profileStore } from "./bench/store-profile.mjs";
import { compareStores } from "./bench/stores.mjs";
import { emulatorArgs, emulatorConfig, localUserpassOverrides } from "./dev-stack-lib.mjs";

let flags;
try {
  ({ values: flags } = parseArgs({
    options: {
      rounds: { type: "string", default: "5" },
      duration: { type: "string", default: "5" },
      warmup: { type: "string", default: "1" },
      connections: { type: "string", default: "50" },
      users: { type: "string", default: "100000" },
      starts: { type: "string", default: "10" },
      only: { type: "string" },
      "no-write": { type: "boolean", default: false },
      json: { type: "string" },
      profile: { type: "string" },
      scenarios: { type: "string" },
      cli: { type: "string" },
      against: { type: "string" },
      store: { type: "string" },
      "trace-gc": { type: "boolean", default: false },
      "no-cpu-prof": { type: "boolean", default: false },
      "loop-delay": { type: "boolean", default: false },
      "node-args": { type: "string" },
      "emulator-args": { type: "string" },
      help: { type: "boolean", short: "h", default: false },
    },
  }));
} catch (error) {
  // An unknown or malformed option: its message, not a stack trace.
  process.stderr.write(`bench: ${error.message} (see --help)\n`);
  process.exit(2);
}
if (flags.help) {
  // The usage is this file's opening comment.
  const { readFileSync } = await import("node:fs");
  const text = readFileSync(new URL(import.meta.url), "utf8").split("\n");
  const usage = text
    .slice(
      1,
      text.findIndex((line) => line.startsWith("import ")),
    )
    .map((line) => line.replace(/^\/\/ ?/, ""));
  process.stdout.write(`${usage.join("\n")}\n`);
  process.exit(0);
}
const rounds = Number(flags.rounds);
const duration = Number(flags.duration);
const warmup = Number(flags.warmup);
const connections = Number(flags.connections);
const manyUsers = Number(flags.users);
const fewUsers = 1000;
const allParts = ["throughput", "start", "scale", "stores"];
const parts = new Set((flags.only ?? allParts.join(",")).split(","));
const log = (message) => process.stderr.write(`${message}\n`);
const script = flags.cli ? resolve(flags.cli) : cli;
const emulatorProcess = (options = {}) => startEmulator({ ...options, script });

// The orchestrator itself (and its polling) stays off the server's core.
if (layout.pinned) spawnSync("taskset", ["-a", "-p", "-c", String(layout.loadCpu), String(process.pid)]);

/** The benchmark scenarios: one request each, against state prepared by `prepare`. */
function scenarios(ctx) {
  const json = { "content-type": "application/json" };
  const bearer = { authorization: `Bearer ${ctx.accessToken}` };
  return [
    {
      id: "profile",
      title: "`GET /auth/profile`",
      request: { method: "GET", path: `${appServices}/auth/profile`, headers: bearer },
    },
    {
      id: "sum",
      title: "`functions/call` `sum`",
      request: {
        method: "POST",
        path: `${appServices}/app/local-app/functions/call`,
        headers: { ...bearer, ...json },
        body: JSON.stringify({ name: "sum", arguments: [{ $numberInt: "1" }, { $numberDouble: "2.5" }] }),
      },
    },
    {
      id: "find",
      title: "`functions/call` `find`, 1,000 documents",
      request: {
        method: "POST",
        path: `${appServices}/app/${dataApp}/functions/call`,
        headers: { authorization: `Bearer ${ctx.dataToken}`, ...json },
        body: JSON.stringify({
          name: "find",
          service: "mongodb-atlas",
          arguments: [{ database: "bench", collection: "items", query: {} }],
        }),
      },
    },
    loginScenario,
    {
      id: "send",
      title: "EmailJS `send` (rate limit off)",
      request: {
        method: "POST",
        path: "/api/v1.0/email/send",
        headers: json,
        body: JSON.stringify({
          user_id: ctx.publicKey,
          service_id: "local_service",
          template_id: "local_template",
          template_params: { to_email: "ada@example.com", subject: "Benchmark", message: "Hello from the benchmark" },
        }),
      },
    },
  ];
}

/** The documents of the `find` scenario: 1,000 small notes-like documents. */
const items = Array.from({ length: 1000 }, (_, i) => ({
  _id: { $oid: (0x6b0000000000000000000000n + BigInt(i)).toString(16).padStart(24, "0") },
  n: i,
  title: `Item ${i}`,
  tags: ["bench", i % 2 ? "odd" : "even"],
  createdAt: { $date: new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString() },
}));

/**
 * The app of the `find` scenario: the default app refuses collections other than its notes and
 * profiles, so the items live in an app whose rules let any user read them.
 */
const dataApp = "bench-data";

async function prepare(base) {
  await callJson(base, "POST", "/_mock/v1/apps", {
    body: { appId: dataApp, config: { rules: { default: { read: true, write: true, insert: true, delete: true } } } },
  });
  await callJson(base, "POST", `/_mock/v1/apps/${dataApp}/data/bench/items`, { body: { documents: items } });
  await callJson(base, "POST", "/_mock/v1/apps/local-app/users", {
    body: { email: "bench@example.com", password: "bench-password", confirmed: true },
  });
  const account = await callJson(base, "POST", "/_mock/v1/emailjs/accounts", {
    body: { rateLimitPerSecond: 0, allowNonBrowser: true },
  });
  const { access_token } = await anonymousLogin(base);
  const { access_token: dataToken } = await anonymousLogin(base, dataApp);
  return { accessToken: access_token, dataToken, publicKey: account.publicKey };
}

/** The emulator's reply to a scenario's request, for the bare server to replay byte for byte. */
async function capture(base, { method, path, headers, body }) {
  const response = await fetch(`${base}${path}`, { method, headers, ...(body ? { body } : {}) });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`${method} ${path} answered ${response.status}: ${text}`);
  return { status: response.status, contentType: response.headers.get("content-type"), body: text };
}

async function startBare(routes) {
  const child = spawnNode([join(root, "scripts", "bench", "bare-server.mjs")], { cpu: layout.serverCpu });
  child.stdin.end(JSON.stringify(routes));
  const url = await listeningUrl(child, "the bare server");
  return { child, pid: child.pid, url, stop: () => stop(child) };
}

/**
 * Warm-up, then a measured run, with the server's CPU time over the measured run (from
 * /proc/<pid>/stat, its function processes included: CPU per request is steadier than req/s on a
 * shared machine).
 */
async function load(server, scenario, extra = {}) {
  const job = {
    url: server.url,
    connections,
    requests: [scenario.request],
    ...(scenario.rotate ? { rotate: scenario.rotate } : {}),
    ...extra,
  };
  if (warmup > 0) await runLoad({ ...job, duration: warmup });
  const cpuBefore = procTreeCpuMs(server.pid);
  const result = await runLoad({ ...job, duration });
  const cpuMs = procTreeCpuMs(server.pid) - cpuBefore;
  return {
    ...result,
    cpuUsPerRequest: (cpuMs * 1000) / Math.max(1, result.requests),
    cpuShare: cpuMs / (result.seconds * 1000),
  };
}

function summarize(runs) {
  return {
    rps: median(runs.map((r) => r.rps)),
    p50: median(runs.map((r) => r.latency.p50)),
    p99: median(runs.map((r) => r.latency.p99)),
    p999: median(runs.map((r) => r.latency.p999)),
    mean: median(runs.map((r) => r.latency.mean)),
    errors: runs.reduce((n, r) => n + r.errors + r.timeouts + (r.requests - r.ok), 0),
    cpuUsPerRequest: median(runs.map((r) => r.cpuUsPerRequest)),
    cpuShare: median(runs.map((r) => r.cpuShare)),
    ...(runs.some((r) => r.databaseCpuUsPerRequest !== undefined)
      ? { databaseCpuUsPerRequest: median(runs.map((r) => r.databaseCpuUsPerRequest)) }
      : {}),
    perRound: runs.map((r) => Math.round(r.rps)),
  };
}

const selected = (s) => !flags.scenarios || flags.scenarios.split(",").includes(s.id);
const routeKey = (r) => `${r.method} ${r.path} ${r.body ?? ""}`;

/** An emulator of a build started and prepared, with its scenarios (their tokens are its own). */
async function preparedEmulator(file) {
  const server = await startEmulator({ script: file });
  try {
    const list = scenarios(await prepare(server.url)).filter(selected);
    return { ...server, list, scenario: (id) => list.find((s) => s.id === id) };
  } catch (error) {
    await server.stop();
    throw error;
  }
}

async function throughput() {
  // The emulator, and with --against the other build of an A/B.
  const builds = { emulator: script, ...(flags.against ? { against: resolve(flags.against) } : {}) };
  const servers = ["bare", ...Object.keys(builds)];
  const running = {};
  let routes = null;
  const stopAll = async () => {
    for (const which of Object.keys(running)) {
      await running[which].stop();
      delete running[which];
    }
  };
  // Fresh processes every round: two processes of one build, measured in the same rounds, came out
  // up to 12 % apart (each its own JIT and memory layout), so a median over rounds of one process
  // measures that process. The bare server replays what the first emulator answered.
  const startAll = async () => {
    for (const [which, file] of Object.entries(builds)) running[which] = await preparedEmulator(file);
    if (!routes) {
      routes = {};
      for (const s of running.emulator.list)
        routes[routeKey(s.request)] = await capture(running.emulator.url, s.request);
    }
    running.bare = await startBare(routes);
  };
  try {
    await startAll();
    const list = running.emulator.list;
    const results = Object.fromEntries(list.map((s) => [s.id, Object.fromEntries(servers.map((w) => [w, []]))]));
    for (let round = 1; round <= rounds; round++) {
      if (round > 1) {
        await stopAll();
        await startAll();
      }
      for (const s of list) {
        // Rotate which server goes first, so drift on the shared machine hits all alike.
        const order = servers.map((_, i) => servers[(i + round - 1) % servers.length]);
        for (const which of order) {
          const server = running[which];
          const r = await load(server, which === "bare" ? s : server.scenario(s.id));
          results[s.id][which].push(r);
          log(
            `round ${round} ${s.id.padEnd(8)} ${which.padEnd(8)} ${Math.round(r.rps)
              .toString()
              .padStart(6)} req/s  p50 ${r.latency.p50.toFixed(2)} ms  p99 ${r.latency.p99.toFixed(2)} ms  ` +
              `${r.cpuUsPerRequest.toFixed(0)} µs CPU/req (${Math.round(100 * r.cpuShare)} % of a core)` +
              (r.ok !== r.requests || r.errors ? `  (${r.requests - r.ok} non-2xx, ${r.errors} errors)` : ""),
          );
        }
      }
    }
    if (builds.against) {
      for (const s of list) {
        const [a, b] = [summarize(results[s.id].emulator), summarize(results[s.id].against)];
        log(
          `A/B ${s.id}: this build ${Math.round(a.rps)} req/s, ${a.cpuUsPerRequest.toFixed(1)} µs CPU/req; ` +
            `${flags.against} ${Math.round(b.rps)} req/s, ${b.cpuUsPerRequest.toFixed(1)} µs CPU/req (medians)`,
        );
      }
    }
    return list.map((s) => ({
      id: s.id,
      title: s.title,
      bytes: Buffer.byteLength(routes[routeKey(s.request)].body),
      bare: summarize(results[s.id].bare),
      emulator: summarize(results[s.id].emulator),
    }));
  } finally {
    await stopAll();
  }
}

/** One HTTP GET; resolves true on any answer, false when the connection is refused. */
function answers(port, path) {
  return new Promise((resolve) => {
    const req = request({ host: "127.0.0.1", port, path, agent: false }, (res) => {
      res.resume();
      res.on("end", () => resolve(true));
    });
    req.on("error", () => resolve(false));
    req.end();
  });
}

/** Milliseconds from spawning a process until the emulator it starts answers on `port`, then stopped. */
async function firstAnswer(port, spawnIt, stopIt) {
  const started = performance.now();
  const child = spawnIt();
  const deadline = started + 15_000;
  let answered = false;
  while (!answered && performance.now() < deadline) {
    answered = await answers(port, `${appServices}/app/local-app/location`);
    if (!answered) await new Promise((resolve) => setTimeout(resolve, 1));
  }
  const ms = performance.now() - started;
  await stopIt(child);
  if (!answered) throw new Error("the emulator did not answer within 15 s");
  return ms;
}

/** Stops `npm run mock` and what it started (npm, its shell, the emulator: one process group). */
async function stopGroup(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  process.kill(-child.pid, "SIGTERM");
  const timer = setTimeout(() => process.kill(-child.pid, "SIGKILL"), 10_000);
  await exited;
  clearTimeout(timer);
}

/**
 * Runs the build once, answering a request, until its launcher has a code cache (src/launch.ts: the
 * first run that lives 2 s writes it), so that the starts measured are those of every start after a
 * developer's first. (An older build without the launcher has none.)
 */
async function ensureCodeCache() {
  if (!existsSync(join(dirname(script), "emulator.cjs"))) return;
  const port = await freePort();
  const child = spawnNode([script, "--port", String(port), "--no-watch"], {
    env: { NODE_DEBUG: "code-cache" },
    stdio: ["ignore", "ignore", "pipe"],
  });
  try {
    // One answer first, so that the cache holds a request's path too.
    await firstAnswer(
      port,
      () => child,
      () => undefined,
    );
    const line = await new Promise((resolve, reject) => {
      let output = "";
      const timer = setTimeout(() => reject(new Error(`no code cache within 15 s:\n${output}`)), 15_000);
      child.stderr.on("data", (chunk) => {
        output += chunk.toString();
        const found = /^CODE-CACHE \d+: (used|written|not written|turned off).*$/m.exec(output);
        if (found) {
          clearTimeout(timer);
          resolve(found[0]);
        }
      });
    });
    log(line.replace(/^CODE-CACHE \d+: /, "code cache: "));
  } finally {
    await stop(child);
  }
}

/**
 * The emulator's arguments as `npm start` gives them (scripts/dev-stack-lib.mjs): kept state in a
 * data folder (saved by the warm-up start, loaded by the others) and a --config file.
 */
let devStackDir;
function devStackArgs(port) {
  devStackDir ??= mkdtempSync(join(tmpdir(), "bench-dev-stack-"));
  const configFile = join(devStackDir, "emulator-config.json");
  const webUrl = "http://127.0.0.1:5173";
  writeFileSync(configFile, JSON.stringify(emulatorConfig(localUserpassOverrides({ webUrl, authFunctions: false }))));
  return [...emulatorArgs({ emulatorPort: port, webUrl, dataDir: devStackDir, configFile }), "--no-watch"];
}

/**
 * Start-up, interleaved: the bundle spawned alone; with kept state and a --config file, as `npm
 * start` runs it; and (for this tree's build) `npm run mock` as a developer types it (npm, the
 * freshness check of the bundle, the emulator).
 */
async function startTimes(count) {
  const times = { node: [], devStack: [], npm: [] };
  const withNpm = script === cli;
  await ensureCodeCache();
  const spawnAlone = (args) => () =>
    spawnNode([script, ...args], { cpu: layout.serverCpu, stdio: ["ignore", "ignore", "inherit"] });
  for (let i = 0; i <= count; i++) {
    const port = await freePort();
    const node = await firstAnswer(port, spawnAlone(["--port", String(port), "--no-watch"]), stop);
    const devStackPort = await freePort();
    const devStack = await firstAnswer(devStackPort, spawnAlone(devStackArgs(devStackPort)), stop);
    let npm = null;
    if (withNpm) {
      const npmPort = await freePort();
      npm = await firstAnswer(
        npmPort,
        () => {
          // On the server's core, as the bundle alone is: a child inherits this process's core,
          // where the poll for the first answer runs.
          const npm = ["npm", "run", "mock", "--silent", "--", "--port", String(npmPort), "--no-watch"];
          const [command, ...args] = layout.pinned ? ["taskset", "-c", String(layout.serverCpu), ...npm] : npm;
          return spawn(command, args, { cwd: root, stdio: ["ignore", "ignore", "inherit"], detached: true });
        },
        stopGroup,
      );
    }
    // The first start warms the file cache; it is not counted.
    if (i > 0) {
      times.node.push(node);
      times.devStack.push(devStack);
      if (npm !== null) times.npm.push(npm);
    }
    log(
      `start ${i === 0 ? "(warm-up)" : i}: ${node.toFixed(0)} ms, with state and --config ${devStack.toFixed(0)} ms${npm === null ? "" : `, npm run mock ${npm.toFixed(0)} ms`}`,
    );
  }
  rmSync(devStackDir, { recursive: true, force: true });
  const summary = (list) => {
    const sorted = [...list].sort((a, b) => a - b);
    return { median: median(list), min: sorted[0], max: sorted.at(-1), runs: list.length };
  };
  return {
    ...summary(times.node),
    devStack: summary(times.devStack),
    ...(withNpm ? { npmRunMock: summary(times.npm) } : {}),
  };
}

async function scale() {
  const probeDir = join(root, "bench-results");
  mkdirSync(probeDir, { recursive: true });
  const start = (name) => {
    rmSync(join(probeDir, `probe-${name}.json`), { force: true });
    return emulatorProcess({ nodeArgs: probeArgs(), env: { BENCH_PROBE_FILE: join(probeDir, `probe-${name}.json`) } });
  };
  const small = await start("small");
  const large = await start("large");
  const probeOf = (e, name) => probe(e.pid, join(probeDir, `probe-${name}.json`));
  const loginJob = (url, amount, every) => ({
    url,
    connections,
    amount,
    requests: [
      {
        method: "POST",
        path: `${appServices}/app/local-app/auth/providers/anon-user/login`,
        headers: { "content-type": "application/json" },
        body: "{}",
      },
    ],
    collect: { field: "access_token", every },
  });
  try {
    // Both: 1,000 anonymous users (each login makes a user and its session), then enough profile
    // calls to fill the journal (a fixed-size ring), so the baseline includes it.
    const tokens = {};
    for (const [name, e] of [
      ["small", small],
      ["large", large],
    ]) {
      const created = await runLoad(loginJob(e.url, fewUsers, 1));
      tokens[name] = created.collected.map((t) => `Bearer ${t}`);
      await runLoad({
        url: e.url,
        connections,
        amount: 6000,
        requests: [{ method: "GET", path: `${appServices}/auth/profile` }],
        rotateAuthorization: tokens[name],
      });
    }
    const users = async (e) => (await callJson(e.url, "GET", "/_mock/v1/apps/local-app")).users;
    const before = { ...(await probeOf(large, "large")), ...procMemory(large.pid), users: await users(large) };
    log(
      `at ${before.users} users: rss ${(before.rss / 2 ** 20).toFixed(1)} MB, heap ${(before.heapUsed / 2 ** 20).toFixed(1)} MB`,
    );
    const grown = await runLoad(loginJob(large.url, manyUsers - fewUsers, Math.ceil((manyUsers - fewUsers) / 1000)));
    // Tokens of users spread over the whole population, for the latency runs.
    tokens.large = grown.collected.map((t) => `Bearer ${t}`);
    const after = { ...(await probeOf(large, "large")), ...procMemory(large.pid), users: await users(large) };
    log(
      `at ${after.users} users: rss ${(after.rss / 2 ** 20).toFixed(1)} MB, heap ${(after.heapUsed / 2 ** 20).toFixed(1)} MB`,
    );
    const added = after.users - before.users;
    const memory = {
      usersBefore: before.users,
      usersAfter: after.users,
      rssBefore: before.rss,
      rssAfter: after.rss,
      heapBefore: before.heapUsed,
      heapAfter: after.heapUsed,
      rssPerUser: (after.rss - before.rss) / added,
      heapPerUser: (after.heapUsed - before.heapUsed) / added,
      loginRps: grown.rps,
    };
    // Profile latency: alternate between the 1,000-user and the 100,000-user emulator.
    const latency = { few: [], many: [], fewSingle: [], manySingle: [] };
    for (let round = 1; round <= rounds; round++) {
      const order = round % 2 ? ["few", "many"] : ["many", "few"];
      for (const which of order) {
        const e = which === "few" ? small : large;
        const job = {
          url: e.url,
          duration,
          warmup,
          requests: [{ method: "GET", path: `${appServices}/auth/profile` }],
          rotateAuthorization: which === "few" ? tokens.small : tokens.large,
        };
        const r = await runLoad({ ...job, connections });
        const single = await runLoad({ ...job, connections: 1 });
        latency[which].push(r);
        latency[`${which}Single`].push(single);
        log(
          `round ${round} profile at ${which === "few" ? fewUsers : manyUsers} users: ${Math.round(r.rps)} req/s, ` +
            `mean ${r.latency.mean.toFixed(2)} ms, p99 ${r.latency.p99.toFixed(2)} ms; ` +
            `1 connection: p50 ${single.latency.p50.toFixed(3)} ms`,
        );
      }
    }
    return {
      memory,
      latency: {
        few: summarize(latency.few),
        many: summarize(latency.many),
        fewSingle: summarize(latency.fewSingle),
        manySingle: summarize(latency.manySingle),
      },
    };
  } finally {
    await small.stop();
    await large.stop();
  }
}

async function profileScenario(id, cpuProf) {
  const dir = join(root, "bench-results", "profiles", `${id}-${Date.now()}`);
  if (cpuProf) mkdirSync(dir, { recursive: true });
  const emulator = await emulatorProcess({ nodeArgs: cpuProf ? ["--cpu-prof", "--cpu-prof-dir", dir] : [] });
  let result;
  try {
    const ctx = await prepare(emulator.url);
    const scenario = scenarios(ctx).find((s) => s.id === id);
    if (!scenario) throw new Error(`no scenario '${id}'`);
    result = await load(emulator, scenario);
  } finally {
    await emulator.stop();
  }
  const under = cpuProf ? " under --cpu-prof" : "";
  log(`${id}: ${Math.round(result.rps)} req/s, p99 ${result.latency.p99.toFixed(2)} ms${under}`);
  if (cpuProf) process.stdout.write(`${summarizeProfile(dir)}\n`);
}

async function main() {
  if (!flags.cli) buildEmulator();
  if (flags.profile && flags.store) {
    if (!["memory", "postgres"].includes(flags.store)) throw new Error("--store is memory or postgres");
    const text = await profileStore({
      store: flags.store,
      ids: flags.profile.split(","),
      duration,
      warmup,
      connections,
      cpuProf: !flags["no-cpu-prof"],
      traceGc: flags["trace-gc"],
      loopDelayed: flags["loop-delay"],
      nodeArgs: flags["node-args"]?.split(" ").filter(Boolean) ?? [],
      emulatorArgs: flags["emulator-args"]?.split(" ").filter(Boolean) ?? [],
      emulatorProcess,
      log,
    });
    process.stdout.write(`${text}\n`);
    return;
  }
  if (flags.profile) return profileScenario(flags.profile, !flags["no-cpu-prof"]);
  const results = {
    date: new Date().toISOString(),
    machine: machine(),
    settings: { rounds, duration, warmup, connections },
  };
  log(`machine: ${JSON.stringify(results.machine)}`);
  if (parts.has("start")) results.start = await startTimes(Number(flags.starts));
  if (parts.has("throughput")) results.throughput = await throughput();
  if (parts.has("scale")) results.scale = await scale();
  if (parts.has("stores"))
    results.stores = await compareStores(
      { emulatorProcess, startBare, capture, load, summarize, rounds, log },
      selected,
    );
  mkdirSync(join(root, "bench-results"), { recursive: true });
  const file = flags.json ?? join(root, "bench-results", `bench-${results.date.replace(/[:.]/g, "-")}.json`);
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  log(`results: ${file}`);
  if (!flags["no-write"] && !flags.against && !flags.scenarios && allParts.every((part) => parts.has(part))) {
    writeReport(join(root, "docs", "benchmarks.md"), results);
    log("docs/benchmarks.md updated");
  }
}

main().catch((error) => {
  log(error.stack ?? String(error));
  process.exit(1);
});
