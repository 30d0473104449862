#!/usr/bin/env node
// Large request bodies against everyone else (docs/decisions/0024-large-bodies-in-slices.md): one
// client sends bodies of many megabytes — a 10 MB call to a function that does not exist, a 15 MB
// string argument, an insertMany of 150,000 small documents, a find whose filter has 200,000
// conditions and an insertOne of a document of 200,000 fields — while another client asks
// `GET …/location` one request after another on its own connection. Prints, per request and store,
// its status and time and the other client's longest wait (what one large request held it for).
//
//   node scripts/hostile-bodies.mjs [--store memory|postgres|both (both)] [--rounds N (2)]
//                                   [--only TEXT (the requests whose names contain it)]
//                                   [--cli FILE (another build, e.g. an older commit's
//                                   mock-server/dist copied to mock-server/dist-old)]
//                                   [--profile DIR (the emulator's CPU profiles, main thread
//                                   and workers, written there when it stops)]
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { buildEmulator, cli, startEmulator } from "./bench/processes.mjs";
import { startCluster } from "./postgres-cluster.mjs";

const { values: flags } = parseArgs({
  options: {
    store: { type: "string", default: "both" },
    rounds: { type: "string", default: "2" },
    cli: { type: "string" },
    only: { type: "string", default: "" },
    profile: { type: "string" },
  },
});
const log = (line) => process.stdout.write(`${line}\n`);
const script = flags.cli ? resolve(flags.cli) : cli;
if (!flags.cli) buildEmulator();

const notes = (n) => Array.from({ length: n }, (_, i) => ({ n: i, title: `Note ${i}`, body: "A short note body." }));
const wide = (n, value) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, value(i)]));
const allBodies = {
  "10 MB call to a missing function": { name: "missing", arguments: [notes(200_000)] },
  "15 MB string argument": { name: "missing", arguments: [{ s: "x".repeat(15_000_000) }] },
  "insertMany of 150,000 documents": {
    name: "insertMany",
    service: "mongodb-atlas",
    arguments: [{ database: "d", collection: "c", documents: notes(150_000) }],
  },
  "find with 200,000 conditions": {
    name: "find",
    service: "mongodb-atlas",
    arguments: [{ database: "d", collection: "w", query: wide(200_000, () => ({ $exists: false })) }],
  },
  "insertOne of 200,000 fields": {
    name: "insertOne",
    service: "mongodb-atlas",
    arguments: [{ database: "d", collection: "w", document: wide(200_000, (i) => i) }],
  },
};
const bodies = Object.fromEntries(Object.entries(allBodies).filter(([name]) => name.includes(flags.only)));
const lifted = {
  documentsPerAnonymousUser: 10_000_000,
  documentBytesPerAnonymousUser: 2 ** 40,
  anonymousDocuments: 10_000_000,
  anonymousDocumentBytes: 2 ** 40,
  writesPerSecondPerAnonymousUser: 10_000_000,
};

async function measure(store, extraArgs) {
  const emulator = await startEmulator({
    script,
    args: extraArgs,
    nodeArgs: flags.profile ? ["--cpu-prof", "--cpu-prof-dir", resolve(flags.profile)] : [],
  });
  try {
    const send = (path, init = {}) =>
      fetch(`${emulator.url}${path}`, { ...init, headers: { "content-type": "application/json", ...init.headers } });
    const config = { rules: { default: { read: true, write: true, insert: true, delete: true } }, limits: lifted };
    let created = await send("/_mock/v1/apps", { method: "POST", body: JSON.stringify({ config }) });
    // (On PostgreSQL the server answers 503 until its database is open.)
    for (let tries = 0; created.status === 503 && tries < 300; tries++) {
      await new Promise((done) => setTimeout(done, 100));
      created = await send("/_mock/v1/apps", { method: "POST", body: JSON.stringify({ config }) });
    }
    const { appId } = await created.json();
    const login = await send(`/api/client/v2.0/app/${appId}/auth/providers/anon-user/login`, {
      method: "POST",
      body: "{}",
    });
    const { access_token: token } = await login.json();
    for (const [name, body] of Object.entries(bodies)) {
      const text = JSON.stringify(body);
      for (let round = 1; round <= Number(flags.rounds); round++) {
        let sending = true;
        let longest = 0;
        let probes = 0;
        const probing = (async () => {
          while (sending) {
            const started = performance.now();
            await (await send(`/api/client/v2.0/app/${appId}/location`)).arrayBuffer();
            longest = Math.max(longest, performance.now() - started);
            probes++;
          }
        })();
        const started = performance.now();
        const reply = await send(`/api/client/v2.0/app/${appId}/functions/call`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}` },
          body: text,
        });
        const answer = await reply.text();
        const took = performance.now() - started;
        sending = false;
        await probing;
        const outcome = reply.status === 200 ? "200" : `${reply.status} ${JSON.parse(answer).error_code}`;
        log(
          `${store}, ${name} (${(text.length / 1e6).toFixed(1)} MB): ${outcome} in ${Math.round(took)} ms; ` +
            `the other client's longest wait ${Math.round(longest)} ms (${probes} requests served)`,
        );
      }
    }
  } finally {
    await emulator.stop();
  }
}

if (flags.store !== "postgres") await measure("memory", []);
if (flags.store !== "memory") {
  const cluster = await startCluster();
  try {
    await measure("PostgreSQL", [
      "--database",
      cluster.url,
      "--signing-secret",
      "hostile-bodies-signing-secret-0123456789",
    ]);
  } finally {
    await cluster.stop();
  }
}
