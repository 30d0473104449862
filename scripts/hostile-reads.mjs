#!/usr/bin/env node
// The read of issue 26's audit at its real size (docs/decisions/0018-fair-shares.md): one user
// holds 1,000,000 documents on PostgreSQL (a throwaway cluster on this machine) and sends four
// `find {"query":{},"limit":1}` at once while another user finds its own 10 notes; then a sorted
// find and a count of everything. Prints each reply's status and time and the emulator's RSS.
//
//   node scripts/hostile-reads.mjs [--documents N (1000000)] [--cli FILE (another build, e.g. an
//                                   older commit's mock-server/dist copied to mock-server/dist-old)]
//
// The documents are written with SQL (as an import would, counted for no user), so seeding takes
// minutes rather than hours; the reads go through the emulator as a client's would.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import pg from "pg";
import { buildEmulator, cli, startEmulator } from "./bench/processes.mjs";
import { startCluster } from "./postgres-cluster.mjs";

const { values: flags } = parseArgs({
  options: { documents: { type: "string", default: "1000000" }, cli: { type: "string" } },
});
const count = Number(flags.documents);
const log = (line) => process.stdout.write(`${line}\n`);
if (!flags.cli) buildEmulator();

const cluster = await startCluster({ settings: { shared_buffers: "256MB" } });
const emulator = await startEmulator({
  script: flags.cli ? resolve(flags.cli) : cli,
  args: ["--database", cluster.url, "--signing-secret", "hostile-reads-signing-secret-0123456789"],
});
try {
  const send = async (method, path, body, token) => {
    const response = await fetch(`${emulator.url}${path}`, {
      method,
      headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, body: await response.json().catch(() => null) };
  };
  // Each user reads and writes their own documents, as the default app's notes.
  const own = { owner_id: "%%user.id" };
  const { body: created } = await send("POST", "/_mock/v1/apps", {
    config: { rules: { default: { read: own, write: own, insert: own, delete: own } } },
  });
  const appId = created.appId;
  const login = async () =>
    (await send("POST", `/api/client/v2.0/app/${appId}/auth/providers/anon-user/login`, {})).body;
  const [attacker, victim] = [await login(), await login()];
  const call = (who, name, argument) =>
    send(
      "POST",
      `/api/client/v2.0/app/${appId}/functions/call`,
      { name, service: "mongodb-atlas", arguments: [{ database: "d", collection: "notes", ...argument }] },
      who.access_token,
    );
  for (let n = 0; n < 10; n++) await call(victim, "insertOne", { document: { owner_id: victim.user_id, n } });

  const started = performance.now();
  const db = new pg.Client({ connectionString: cluster.url });
  await db.connect();
  await db.query("SET emulator.limits = 'off'");
  await db.query(
    `INSERT INTO documents (app_id, db, coll, id_key, doc, ejson)
     SELECT $1, 'd', 'notes', 'x' || i, t::jsonb, t FROM (
       SELECT i, format('{"_id":"x%s","owner_id":"%s","title":"Note %s","body":"A short note body.","n":{"$numberInt":"%s"}}',
                        i, $2::text, i, i) AS t
         FROM generate_series(1, $3::int) i) AS rows`,
    [appId, attacker.user_id, count],
  );
  await db.query("ANALYZE documents");
  await db.end();
  log(
    `${count.toLocaleString("en-US")} documents of one user written in ${((performance.now() - started) / 1000).toFixed(0)} s`,
  );

  const rss = () =>
    Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${emulator.pid}/status`, "utf8"))[1]) / 1024);
  const timed = async (reply) => {
    const t = performance.now();
    const { status, body } = await reply;
    return `${status} in ${Math.round(performance.now() - t)} ms${status === 200 ? "" : ` (${body?.error})`}`;
  };
  const attacks = Array.from({ length: 4 }, () => timed(call(attacker, "find", { query: {}, limit: 1 })));
  await new Promise((done) => setTimeout(done, 100));
  const meanwhile = await timed(call(victim, "find", { query: {} }));
  log(`four finds {"query":{},"limit":1} of that user at once: ${(await Promise.all(attacks)).join("; ")}`);
  log(`another user's find of its 10 notes meanwhile: ${meanwhile}; emulator RSS ${rss()} MB`);
  log(
    `find sorted {n: -1}, limit 1: ${await timed(call(attacker, "find", { query: {}, sort: { n: -1 }, limit: 1 }))}; RSS ${rss()} MB`,
  );
  log(`count {}: ${await timed(call(attacker, "count", { query: {} }))}; RSS ${rss()} MB`);
} finally {
  await emulator.stop();
  await cluster.stop();
}
