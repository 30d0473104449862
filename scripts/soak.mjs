#!/usr/bin/env node
// `npm run soak`: mixed traffic against the emulator for 5 minutes (by default) from 50 concurrent
// virtual clients: e-mail/password and anonymous logins, profile, functions (`sum`, `find`), data
// (insert and delete), change streams opened, fed and closed, EmailJS sends, mail read and cleared
// through the control API, session refresh, log-out and user deletion (so the emulator's state
// stays bounded and memory growth means a leak). Measured from outside: RSS, open descriptors and
// threads in /proc; heap and active handles/timers from a measuring preload (scripts/bench/probe.mjs,
// not part of the emulator). Passes with zero errors, RSS growth < 10 % after warm-up, no change
// streams left open and no handles or timers left behind; writes its section of docs/soak.md.
//
// `--store postgres` soaks the production store: a throwaway cluster (the benchmarks' settings,
// its processes on the emulator's core), the emulator started with `--database`. It also counts
// every table's rows at each sample: the traffic leaves nothing behind, so a table that grows after
// warm-up (beyond 10 % and 100 rows) keeps what it should not, and fails the soak. With
// `--instances 2` two instances share the database, as in production: requests go to one and the
// other in turn (a session made on one is refreshed on the other, a stream opened on one hears of
// the write made through the other), and each instance is measured.
//
//   npm run soak -- [--duration S (300; env SOAK_SECONDS)] [--warmup S] [--clients 50]
//                   [--store memory|postgres] [--instances 1|2 (postgres)] [--no-write]
import { spawnSync } from "node:child_process";
import { mkdirSync, rmSync } from "node:fs";
import { Agent, request } from "node:http";
import { join } from "node:path";
import { parseArgs } from "node:util";
import pg from "pg";
import { probe, probeArgs } from "./bench/client.mjs";
import { buildEmulator, layout, machine, openFds, procMemory, root, startEmulator } from "./bench/processes.mjs";
import { replaceSection } from "./bench/report.mjs";
import { pinToServerCore, storeClusterSettings } from "./bench/stores.mjs";
import { startCluster } from "./postgres-cluster.mjs";

const { values: flags } = parseArgs({
  options: {
    duration: { type: "string", default: process.env.SOAK_SECONDS ?? "300" },
    warmup: { type: "string" },
    clients: { type: "string", default: "50" },
    store: { type: "string", default: "memory" },
    instances: { type: "string", default: "1" },
    "no-write": { type: "boolean", default: false },
  },
});
const durationS = Number(flags.duration);
const warmupS = Number(flags.warmup ?? Math.min(60, Math.max(10, Math.round(durationS * 0.2))));
const clients = Number(flags.clients);
if (!["memory", "postgres"].includes(flags.store)) throw new Error("--store is memory or postgres");
const onPostgres = flags.store === "postgres";
const instances = Number(flags.instances);
if (instances !== 1 && !(instances === 2 && onPostgres))
  throw new Error("--instances is 1, or 2 with --store postgres");
/** How an instance is named in the report. */
const nameOf = (i) => (instances === 1 ? "" : ` (instance ${"ab"[i]})`);
const log = (line) => process.stderr.write(`${line}\n`);
const appId = "soak";
const base = "/api/client/v2.0";
const users = 100;
const password = "soak-password-1";

if (layout.pinned) spawnSync("taskset", ["-a", "-p", "-c", String(layout.loadCpu), String(process.pid)]);

// ---------------------------------------------------------------------------------------------
// HTTP over kept-alive connections the soak can close at the end (so leftover sockets are the emulator's)

// (An idle connection is closed after 60 s, before the server closes it, as a proxy in front does.)
const agent = new Agent({ keepAlive: true, maxSockets: clients * 2, timeout: 60_000 });
/** The instances' URLs; requests go to each in turn unless one is named (`on`). */
const urls = [];
let turn = 0;
const nextInstance = () => turn++ % urls.length;

function send(method, path, { body, headers = {}, timeoutMs = 15_000, keepAlive = true, on = nextInstance() } = {}) {
  const payload = body === undefined ? undefined : Buffer.from(typeof body === "string" ? body : JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = request(
      `${urls[on]}${path}`,
      {
        method,
        agent: keepAlive ? agent : false,
        headers: {
          ...(payload ? { "content-type": "application/json", "content-length": payload.length } : {}),
          ...(keepAlive ? {} : { connection: "close" }),
          ...headers,
        },
      },
      (res) => {
        const chunks = [];
        res.on("data", (chunk) => chunks.push(chunk));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString();
          const json = String(res.headers["content-type"] ?? "").includes("json") && text ? JSON.parse(text) : text;
          resolve({ status: res.statusCode, headers: res.headers, body: json });
        });
        res.on("error", reject);
      },
    );
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`${method} ${path}: no answer within ${timeoutMs} ms`)));
    req.on("error", (error) =>
      reject(
        new Error(
          `${error.message} (${method} ${path.split("?")[0]}, on ${req.reusedSocket ? "a kept-alive" : "a new"} connection)`,
        ),
      ),
    );
    req.end(payload);
  });
}

const counts = {};
/** Each kind's latencies (ms) after warm-up. */
const latencies = {};
let measuringFrom = Number.POSITIVE_INFINITY;
const errors = [];
let errorCount = 0;
/** Requests the server refused as over its load (429 with `Retry-After`: password checks waiting), by kind. */
const shed = {};

function took(kind, started) {
  if (started < measuringFrom) return;
  latencies[kind] ??= [];
  latencies[kind].push(performance.now() - started);
}

async function expectStatus(kind, promise, statuses) {
  counts[kind] = (counts[kind] ?? 0) + 1;
  const started = performance.now();
  try {
    const reply = await promise;
    took(kind, started);
    if (reply.status === 429 && reply.headers["retry-after"] !== undefined) {
      shed[kind] = (shed[kind] ?? 0) + 1;
      return null;
    }
    if (!statuses.includes(reply.status))
      throw new Error(`${kind} answered ${reply.status}: ${JSON.stringify(reply.body).slice(0, 200)}`);
    return reply.body;
  } catch (error) {
    errorCount++;
    if (errors.length < 20)
      errors.push(
        error.message.startsWith(kind)
          ? error.message
          : `${kind} (${urls.length > 1 ? "an instance" : "the emulator"}): ${error.message}`,
      );
    return null;
  }
}

const bearer = (token) => ({ authorization: `Bearer ${token}` });
const call = (token, payload, on = nextInstance()) =>
  send("POST", `${base}/app/${appId}/functions/call`, { body: payload, headers: bearer(token), on });

/**
 * Opens a change stream on one document id, makes the change (through the other instance, when
 * there are two), reads its event, and closes the stream.
 */
function watchOnce(token, id) {
  const on = nextInstance();
  counts.watch = (counts.watch ?? 0) + 1;
  const started = performance.now();
  const watch = Buffer.from(
    JSON.stringify({
      name: "watch",
      service: "mongodb-atlas",
      arguments: [{ database: "soak", collection: "watched", ids: [id] }],
    }),
  ).toString("base64");
  return new Promise((resolve) => {
    let done = false;
    const finish = (problem) => {
      if (done) return;
      done = true;
      if (!problem) took("watch", started);
      clearTimeout(timer);
      req.destroy();
      if (problem) {
        errorCount++;
        if (errors.length < 20) errors.push(`watch: ${problem}`);
      }
      resolve();
    };
    const timer = setTimeout(() => finish("no change event within 10 s"), 10_000);
    const req = request(
      `${urls[on]}${base}/app/${appId}/functions/call?baas_request=${encodeURIComponent(watch)}`,
      { agent, headers: bearer(token) },
      (res) => {
        if (res.statusCode !== 200) return finish(`stream answered ${res.statusCode}`);
        let text = "";
        res.on("data", (chunk) => {
          text += chunk;
          if (text.includes("data: ")) finish(null);
        });
        res.on("error", () => finish(done ? null : "stream error"));
        // The stream is open (headers flushed): make the change it waits for.
        expectStatus(
          "insert (watched)",
          call(
            token,
            {
              name: "insertOne",
              service: "mongodb-atlas",
              arguments: [{ database: "soak", collection: "watched", document: { _id: id } }],
            },
            (on + 1) % urls.length,
          ),
          [200],
        );
      },
    );
    req.on("error", (error) => finish(done ? null : error.message));
    req.end();
  }).then(() =>
    expectStatus(
      "delete (watched)",
      call(token, {
        name: "deleteOne",
        service: "mongodb-atlas",
        arguments: [{ database: "soak", collection: "watched", query: { _id: id } }],
      }),
      [200],
    ),
  );
}

// ---------------------------------------------------------------------------------------------
// One virtual client: a session's worth of calls, over and over, leaving no state behind

async function client(n, until, publicKey) {
  for (let i = 0; Date.now() < until; i++) {
    const email = `soak-${(n * 7 + i) % users}@example.com`;
    const session = await expectStatus(
      "login (e-mail/password)",
      send("POST", `${base}/app/${appId}/auth/providers/local-userpass/login`, { body: { username: email, password } }),
      [200],
    );
    if (!session) continue;
    const token = session.access_token;
    await expectStatus("profile", send("GET", `${base}/auth/profile`, { headers: bearer(token) }), [200]);
    await expectStatus(
      "function sum",
      call(token, { name: "sum", arguments: [{ $numberInt: String(i) }, { $numberInt: "1" }] }),
      [200],
    );
    await expectStatus(
      "find (20 documents)",
      call(token, {
        name: "find",
        service: "mongodb-atlas",
        arguments: [{ database: "soak", collection: "items", query: { n: { $gte: i % 100 } }, limit: 20 }],
      }),
      [200],
    );
    const scratch = `c${n}-i${i}`;
    await expectStatus(
      "insertOne",
      call(token, {
        name: "insertOne",
        service: "mongodb-atlas",
        arguments: [{ database: "soak", collection: "scratch", document: { _id: scratch, n: i } }],
      }),
      [200],
    );
    await expectStatus(
      "deleteOne",
      call(token, {
        name: "deleteOne",
        service: "mongodb-atlas",
        arguments: [{ database: "soak", collection: "scratch", query: { _id: scratch } }],
      }),
      [200],
    );
    if (i % 4 === 0) await watchOnce(token, `w${n}-${i}`);
    await expectStatus(
      "EmailJS send",
      send("POST", "/api/v1.0/email/send", {
        body: {
          user_id: publicKey,
          service_id: "local_service",
          template_id: "local_template",
          template_params: { to_email: email, subject: "Soak", message: `message ${i}` },
        },
      }),
      [200],
    );
    if (i % 10 === 0) {
      await expectStatus(
        "control: list mail",
        send("GET", `/_mock/v1/mail?account=${publicKey}&to=${encodeURIComponent(email)}`),
        [200],
      );
      await expectStatus("control: clear mail", send("DELETE", `/_mock/v1/mail?account=${publicKey}`), [204]);
    }
    const refreshed = await expectStatus(
      "refresh session",
      send("POST", `${base}/auth/session`, { headers: bearer(session.refresh_token) }),
      [201],
    );
    if (refreshed)
      await expectStatus(
        "profile",
        send("GET", `${base}/auth/profile`, { headers: bearer(refreshed.access_token) }),
        [200],
      );
    await expectStatus(
      "log out",
      send("DELETE", `${base}/auth/session`, { headers: bearer(session.refresh_token) }),
      [204],
    );
    if (i % 3 === 0) {
      const guest = await expectStatus(
        "login (anonymous)",
        send("POST", `${base}/app/${appId}/auth/providers/anon-user/login`, { body: {} }),
        [200],
      );
      if (guest)
        await expectStatus(
          "delete user",
          send("DELETE", `${base}/auth/delete`, { headers: bearer(guest.access_token) }),
          [204],
        );
    }
  }
}

// ---------------------------------------------------------------------------------------------

async function setup() {
  // Its collections open to every user (the template's rules cover only the notes and profiles);
  // thousands of anonymous logins from this one address (decision 0018's cap is 100 a day).
  const config = {
    rules: { default: { read: true, write: true, insert: true, delete: true } },
    limits: { anonymousUsersPerAddress: 1_000_000_000 },
  };
  await expectStatus("setup", send("POST", "/_mock/v1/apps", { body: { appId, config } }), [201]);
  for (let i = 0; i < users; i++) {
    await expectStatus(
      "setup",
      send("POST", `/_mock/v1/apps/${appId}/users`, {
        body: { email: `soak-${i}@example.com`, password, confirmed: true },
      }),
      [201],
    );
  }
  const documents = Array.from({ length: 200 }, (_, n) => ({ n, title: `Item ${n}`, tags: ["soak"] }));
  await expectStatus("setup", send("POST", `/_mock/v1/apps/${appId}/data/soak/items`, { body: { documents } }), [201]);
  const account = await expectStatus(
    "setup",
    send("POST", "/_mock/v1/emailjs/accounts", { body: { rateLimitPerSecond: 0, allowNonBrowser: true } }),
    [201],
  );
  return account.publicKey;
}

/** Every table's rows (exact counts), by table name. */
async function tableRows(database) {
  const { rows: tables } = await database.query(
    "SELECT quote_ident(tablename) AS name FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1",
  );
  const { rows } = await database.query(
    tables
      .map((t) => `SELECT ${pg.escapeLiteral(t.name)} AS name, count(*)::int AS n FROM ${t.name}`)
      .join(" UNION ALL "),
  );
  return Object.fromEntries(rows.map((r) => [r.name, r.n]));
}

/** Each instance's process, with the database's rows and the app's streams and users. */
async function snapshot(emulators, database) {
  const procs = [];
  let watchers = 0;
  let users = 0;
  for (const [i, emulator] of emulators.entries()) {
    // Its own short-lived connection, so the soak's measuring leaves no socket of its own open.
    const app = (await send("GET", `/_mock/v1/apps/${appId}`, { keepAlive: false, on: i })).body;
    watchers += app.watchers;
    users = app.users;
    const heap = await probe(emulator.pid, emulator.probeFile);
    const proc = procMemory(emulator.pid);
    procs.push({
      rss: proc.rss,
      threads: proc.threads,
      fds: openFds(emulator.pid),
      heapUsed: heap.heapUsed,
      resources: heap.resources,
    });
  }
  return { ...(database ? { rows: await tableRows(database) } : {}), at: Date.now(), procs, watchers, users };
}

/** " (p50 / p99 ms)" of latencies, or nothing without them. */
function percentiles(values) {
  if (!values?.length) return "";
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  const ms = (v) => (v < 10 ? v.toFixed(1) : Math.round(v).toString());
  return ` (${ms(at(0.5))} / ${ms(at(0.99))} ms)`;
}

const mb = (bytes) => `${(bytes / 2 ** 20).toFixed(1)} MB`;
const resourcesText = (r) =>
  Object.entries(r)
    .sort()
    .map(([k, v]) => `${k} ${v}`)
    .join(", ");

async function main() {
  buildEmulator();
  const probeDir = join(root, "bench-results");
  mkdirSync(probeDir, { recursive: true });
  const cluster = onPostgres ? await startCluster({ settings: storeClusterSettings }) : null;
  if (cluster) pinToServerCore(cluster.pid());
  // (Its own connection: not one of the emulator's descriptors.)
  const database = cluster ? new pg.Client({ connectionString: cluster.url }) : null;
  const emulators = [];
  const stopAll = async () => {
    await Promise.all(emulators.map((emulator) => emulator.stop()));
    await database?.end();
    await cluster?.stop();
  };
  try {
    for (let i = 0; i < instances; i++) {
      const probeFile = join(probeDir, `probe-soak${i === 0 ? "" : `-${i}`}.json`);
      rmSync(probeFile, { force: true });
      const emulator = await startEmulator({
        nodeArgs: probeArgs(),
        env: { BENCH_PROBE_FILE: probeFile },
        args: cluster ? ["--database", cluster.url, "--signing-secret", "soak-signing-secret-0123456789abcdef"] : [],
      });
      emulators.push({ ...emulator, probeFile });
      urls.push(emulator.url);
    }
  } catch (error) {
    await stopAll();
    throw error;
  }
  log(
    `soak: ${durationS} s (warm-up ${warmupS} s), ${clients} clients, ${flags.store} store, emulator pid ${emulators.map((e) => e.pid).join(" and ")}`,
  );
  const samples = [];
  let result;
  try {
    await database?.connect();
    const publicKey = await setup();
    // One round of each call before the idle baseline (starts the app's function worker).
    await client(0, Date.now() + 1, publicKey);
    agent.destroy();
    const baseline = await waitForIdle(emulators, null, database);
    const started = Date.now();
    const until = started + durationS * 1000;
    measuringFrom = performance.now() + warmupS * 1000;
    const sampler = setInterval(async () => {
      const s = await snapshot(emulators, database).catch(() => null);
      if (!s) return;
      samples.push({ ...s, t: (s.at - started) / 1000 });
      const procs = s.procs.map(
        (p, i) => `${nameOf(i)} rss ${mb(p.rss)}  heap ${mb(p.heapUsed)}  fds ${p.fds}  threads ${p.threads}`,
      );
      log(
        `t=${Math.round((s.at - started) / 1000)} s ${procs.join(";")}  watchers ${s.watchers}  users ${s.users}  errors ${errorCount}`,
      );
    }, 10_000);
    await Promise.all(Array.from({ length: clients }, (_, n) => client(n, until, publicKey)));
    clearInterval(sampler);
    const elapsed = (Date.now() - started) / 1000;
    agent.destroy();
    const end = await waitForIdle(emulators, baseline, database);
    result = { baseline, end, samples, elapsed, publicKey };
  } finally {
    await stopAll();
  }
  report(result);
}

/** An instance's handles and timers more than at the baseline. */
const leftOver = (proc, before) =>
  Object.entries(proc.resources)
    .filter(([name, n]) => n > (before.resources[name] ?? 0))
    .map(([name, n]) => `${name} +${n - (before.resources[name] ?? 0)}`);

/**
 * After the traffic: no stream open, and each instance's descriptors, threads, handles and timers
 * back to the idle baseline (closing connections take a moment; on PostgreSQL the pool closes a
 * connection idle for 30 s), within 30 s more; the last snapshot either way.
 */
async function waitForIdle(emulators, baseline, database) {
  const deadline = Date.now() + (onPostgres ? 60_000 : 30_000);
  for (;;) {
    const s = await snapshot(emulators, database);
    const settled =
      s.watchers === 0 &&
      (baseline === null ||
        s.procs.every((p, i) => {
          const before = baseline.procs[i];
          return p.fds <= before.fds && p.threads <= before.threads && leftOver(p, before).length === 0;
        }));
    if (settled || Date.now() > deadline) return s;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

function report({ baseline, end, samples, elapsed }) {
  const requests = Object.values(counts).reduce((a, b) => a + b, 0);
  const afterWarmup = samples.filter((s) => s.t >= warmupS);
  const first = afterWarmup[0] ?? samples[0];
  const last = samples.at(-1);
  const growth = (i) => (first && last ? (last.procs[i].rss - first.procs[i].rss) / first.procs[i].rss : Number.NaN);
  // Least-squares slope of RSS over time after warm-up (MB per minute), steadier than two points.
  const slope = (i) => {
    if (afterWarmup.length < 2) return Number.NaN;
    const xs = afterWarmup.map((s) => s.t);
    const ys = afterWarmup.map((s) => s.procs[i].rss);
    const ax = xs.reduce((a, b) => a + b, 0) / xs.length;
    const ay = ys.reduce((a, b) => a + b, 0) / ys.length;
    const num = xs.reduce((a, x, i) => a + (x - ax) * (ys[i] - ay), 0);
    const den = xs.reduce((a, x) => a + (x - ax) ** 2, 0);
    return den === 0 ? Number.NaN : ((num / den) * 60) / 2 ** 20;
  };
  const each = baseline.procs.map((before, i) => {
    const after = end.procs[i];
    const leftover = leftOver(after, before);
    return {
      before,
      after,
      leftover,
      rss: growth(i) < 0.1,
      descriptors: after.fds <= before.fds && after.threads <= before.threads,
    };
  });
  // Tables that grew after warm-up (beyond what the clients hold at a time: 10 % and 100 rows).
  const grown = Object.entries(last?.rows ?? {})
    .map(([table, n]) => ({ table, from: first.rows[table] ?? 0, to: n }))
    .filter(({ from, to }) => to - from > Math.max(100, 0.1 * from));
  const rowsText = (rows) =>
    Object.entries(rows)
      .filter(([, n]) => n > 0)
      .map(([table, n]) => `${table} ${n.toLocaleString("en-US")}`)
      .join(", ");
  const shedCount = Object.values(shed).reduce((a, b) => a + b, 0);
  const verdicts = {
    errors: errorCount === 0,
    shed: shedCount <= 0.01 * requests,
    rss: each.every((e) => e.rss),
    streams: end.watchers === 0,
    handles: each.every((e) => e.leftover.length === 0 && e.descriptors),
    rows: grown.length === 0,
  };
  const ok = Object.values(verdicts).every(Boolean);
  const mark = (v) => (v ? "✅" : "❌");
  const m = machine();
  const lines = [
    `Run of ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC on ${m.cpu}, ${m.cores} cores, Node ${m.node}; ` +
      (onPostgres
        ? `PostgreSQL store (a throwaway cluster on the emulator's core)${instances > 1 ? `, ${instances} instances sharing it` : ""}; `
        : "") +
      `emulator${instances > 1 ? "s" : ""} pinned to core 0, clients to core 1: ` +
      `${Math.round(elapsed)} s of traffic from ${clients} concurrent clients (warm-up: the first ${warmupS} s), ` +
      `${requests.toLocaleString("en-US")} requests (${Math.round(requests / elapsed).toLocaleString("en-US")}/s).`,
    "",
    "| check | result | target | met |",
    "|---|---|---|:-:|",
    `| errors (unexpected status, network error, timeout, missing change event) | ${errorCount} | 0 | ${mark(verdicts.errors)} |`,
    `| refused as over the server's load (429 with \`Retry-After\`) | ${
      Object.entries(shed)
        .map(([kind, n]) => `${kind} ${n}`)
        .join(", ") || "none"
    } | ≤ 1 % of requests | ${mark(verdicts.shed)} |`,
    ...each.map(
      (e, i) =>
        `| RSS after warm-up → end (after a full GC at each sample)${nameOf(i)} | ${mb(first?.procs[i].rss ?? Number.NaN)} → ${mb(last?.procs[i].rss ?? Number.NaN)} (${(100 * growth(i)).toFixed(1)} %; trend ${slope(i).toFixed(2)} MB/min) | < 10 % | ${mark(e.rss)} |`,
    ),
    `| change streams open after the traffic (\`GET /_mock/v1/apps/soak\` watchers) | ${end.watchers} | 0 | ${mark(verdicts.streams)} |`,
    ...each.flatMap((e, i) => [
      `| open descriptors / threads, idle before → idle after${nameOf(i)} | ${e.before.fds} / ${e.before.threads} → ${e.after.fds} / ${e.after.threads} | not more | ${mark(e.descriptors)} |`,
      `| active handles and timers (\`process.getActiveResourcesInfo()\`), idle before → idle after${nameOf(i)} | ${resourcesText(e.before.resources)} → ${resourcesText(e.after.resources)} | nothing left over | ${mark(e.leftover.length === 0)} |`,
    ]),
    ...each.map(
      (_, i) =>
        `| heap used (after full GC), after warm-up → end${nameOf(i)} | ${mb(first?.procs[i].heapUsed ?? Number.NaN)} → ${mb(last?.procs[i].heapUsed ?? Number.NaN)} | | |`,
    ),
    ...(onPostgres
      ? [
          `| tables that grew after warm-up (rows) | ${grown.map((g) => `${g.table} ${g.from} → ${g.to}`).join(", ") || "none"} | none | ${mark(verdicts.rows)} |`,
          `| rows, idle before → idle after | ${rowsText(baseline.rows)} → ${rowsText(end.rows)} | | |`,
        ]
      : []),
    "",
    `Requests by kind (p50 / p99 after warm-up): ${Object.entries(counts)
      .map(([k, v]) => `${k} ${v.toLocaleString("en-US")}${percentiles(latencies[k])}`)
      .join("; ")}.`,
    ...(errors.length > 0 ? ["", "First errors:", ...errors.map((e) => `- ${e}`)] : []),
  ];
  const text = lines.join("\n");
  process.stdout.write(`${text}\n\n${ok ? "soak passed" : "soak FAILED"}\n`);
  if (!flags["no-write"]) {
    const marker = onPostgres ? `soak-postgres${instances > 1 ? "-instances" : ""}` : "soak";
    replaceSection(
      join(root, "docs", "soak.md"),
      `<!-- ${marker}:start -->`,
      `<!-- ${marker}:end -->`,
      text,
      "## Soak",
    );
    log("docs/soak.md updated");
  }
  process.exitCode = ok ? 0 : 1;
}

main().catch((error) => {
  log(error.stack ?? String(error));
  process.exit(1);
});
