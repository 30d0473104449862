// The store part of `npm run bench`: the bare node:http server, the emulator on its in-memory
// store and the emulator on PostgreSQL (a throwaway cluster on this machine), in one run, on the
// same data — 100,000 notes owned by 1,000 users, each user reading their own 100 through the
// default app's owner rule — for login, profile, insertOne and that find.
//
// Each scenario runs twice: as one user's traffic (one account logs in, one user reads, one writes:
// the hostile case, every request on the same rows) and as the traffic of 1,000 users, each request
// of the next user in turn (what an app with many users sees; each user's own rows in turn).
//
// The database is part of the server side: its processes are pinned to the server's core with the
// emulator's (the load generator keeps the other core), so the comparison is one core each way.
import { spawnSync } from "node:child_process";
import { startCluster } from "../postgres-cluster.mjs";
import { anonymousLogin, appServices, callJson, loginScenario } from "./client.mjs";
import { layout, procTreeCpuMs } from "./processes.mjs";

const secret = "benchmark-signing-secret-0123456789abcdef";
const owners = 1000;
const perOwner = 100;

/** The settings of the benchmark's cluster (on disk, fsync on: commits are durable, as in production). */
export const storeClusterSettings = { max_connections: 100, shared_buffers: "128MB" };

/** The notes of the default app (notes-app.notes: each user reads and writes their own, `owner_id`). */
export async function seed(base, log, name) {
  const started = performance.now();
  const users = [];
  for (let i = 0; i < owners; i++) users.push(await anonymousLogin(base));
  for (let from = 0; from < owners; from += 10) {
    const documents = [];
    for (const user of users.slice(from, from + 10)) {
      for (let n = 0; n < perOwner; n++) {
        documents.push({ owner_id: user.user_id, title: `Note ${n}`, body: "A short note body.", n });
      }
    }
    await callJson(base, "POST", "/_mock/v1/apps/local-app/data/notes-app/notes", { body: { documents } });
  }
  await callJson(base, "POST", "/_mock/v1/apps/local-app/users", {
    body: { email: "bench@example.com", password: "bench-password", confirmed: true },
  });
  // The accounts the many users' logins use, a few at once (each is a password hash).
  const emails = Array.from({ length: owners }, (_, i) => `bench-${i}@example.com`);
  for (let from = 0; from < owners; from += 8) {
    await Promise.all(
      emails.slice(from, from + 8).map((email) =>
        callJson(base, "POST", "/_mock/v1/apps/local-app/users", {
          body: { email, password: "bench-password", confirmed: true },
        }),
      ),
    );
  }
  log(
    `${name}: ${owners * perOwner} notes of ${owners} users in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  // The users whose tokens the scenarios use: one reads (profile, find), another one writes, so
  // the notes the reader finds stay 100 however many the writer adds.
  return { reader: users[owners / 2], writer: users[owners / 2 + 1], users, emails };
}

/** The notes a scenario inserted (`n: -1`), deleted by their owners, a few at once. */
async function deleteInserted(base, users) {
  for (let from = 0; from < users.length; from += 25) {
    await Promise.all(
      users.slice(from, from + 25).map((user) =>
        callJson(base, "POST", `${appServices}/app/local-app/functions/call`, {
          headers: { authorization: `Bearer ${user.access_token}` },
          body: {
            name: "deleteMany",
            service: "mongodb-atlas",
            arguments: [{ database: "notes-app", collection: "notes", query: { owner_id: user.user_id, n: -1 } }],
          },
        }),
      ),
    );
  }
}

export function scenarios({ reader, writer, users, emails }) {
  const json = { "content-type": "application/json" };
  const bearer = { authorization: `Bearer ${reader.access_token}` };
  const call = (body, user = reader) => ({
    method: "POST",
    path: `${appServices}/app/local-app/functions/call`,
    headers: { authorization: `Bearer ${user.access_token}`, ...json },
    body: JSON.stringify(body),
  });
  return [
    loginScenario,
    {
      id: "profile",
      title: "`GET /auth/profile`",
      request: { method: "GET", path: `${appServices}/auth/profile`, headers: bearer },
    },
    {
      id: "insertOne",
      title: "`insertOne` of a note (owner rule checked)",
      request: call(
        {
          name: "insertOne",
          service: "mongodb-atlas",
          arguments: [
            { database: "notes-app", collection: "notes", document: { owner_id: writer.user_id, title: "New", n: -1 } },
          ],
        },
        writer,
      ),
      // What a round inserted is deleted after it, so every round (and every later scenario) of
      // both stores sees the same 100,000 notes, whichever store inserted more.
      cleanup: call(
        {
          name: "deleteMany",
          service: "mongodb-atlas",
          arguments: [{ database: "notes-app", collection: "notes", query: { owner_id: writer.user_id, n: -1 } }],
        },
        writer,
      ),
    },
    {
      id: "find",
      title: `\`find\` of one user's ${perOwner} notes among ${(owners * perOwner).toLocaleString("en-US")}`,
      request: call({
        name: "find",
        service: "mongodb-atlas",
        arguments: [{ database: "notes-app", collection: "notes", query: {}, sort: { n: 1 } }],
      }),
    },
    ...manyUsers({ users, emails }),
  ];
}

/** The same four as the traffic of 1,000 users: each request is the next user's. */
function manyUsers({ users, emails }) {
  const tokens = users.map((user) => ({ authorization: `Bearer ${user.access_token}` }));
  const many = `, ${owners.toLocaleString("en-US")} users`;
  const note = (user) => ({
    name: "insertOne",
    service: "mongodb-atlas",
    arguments: [
      { database: "notes-app", collection: "notes", document: { owner_id: user.user_id, title: "New", n: -1 } },
    ],
  });
  const functionCall = (body) => ({
    method: "POST",
    path: `${appServices}/app/local-app/functions/call`,
    headers: { "content-type": "application/json", ...tokens[0] },
    body: JSON.stringify(body),
  });
  return [
    {
      id: "login*",
      title: `${loginScenario.title}${many}`,
      request: loginScenario.request,
      rotate: emails.map((username) => ({ body: { username, password: "bench-password" } })),
    },
    {
      id: "profile*",
      title: `\`GET /auth/profile\`${many}`,
      request: { method: "GET", path: `${appServices}/auth/profile`, headers: tokens[0] },
      rotate: tokens.map((headers) => ({ headers })),
    },
    {
      id: "insertOne*",
      title: `\`insertOne\` of a note${many}`,
      request: functionCall(note(users[0])),
      rotate: users.map((user, i) => ({ headers: tokens[i], body: note(user) })),
      cleanup: (base) => deleteInserted(base, users),
    },
    {
      id: "find*",
      title: `\`find\` of each user's ${perOwner} notes${many}`,
      request: functionCall({
        name: "find",
        service: "mongodb-atlas",
        arguments: [{ database: "notes-app", collection: "notes", query: {}, sort: { n: 1 } }],
      }),
      rotate: tokens.map((headers) => ({ headers })),
    },
  ];
}

/** Pins a process and all its threads (and the children it forks later) to the server core. */
export function pinToServerCore(pid) {
  if (layout.pinned) spawnSync("taskset", ["-a", "-p", "-c", String(layout.serverCpu), String(pid)]);
}

/** Runs a scenario's cleanup, if it has one; a failure is logged (the figures then say more data). */
async function cleanUp(server, scenario, log) {
  if (!scenario.cleanup) return;
  try {
    if (typeof scenario.cleanup === "function") {
      await scenario.cleanup(server.url);
    } else {
      const { method, path, headers, body } = scenario.cleanup;
      await callJson(server.url, method, path, { headers, body });
    }
  } catch (error) {
    log(`warning: the ${scenario.id} scenario's documents were not deleted (${error.message})`);
  }
}

/** The stores part: `selected` picks its scenarios (`--scenarios`), all by default. */
export async function compareStores(
  { emulatorProcess, startBare, capture, load, summarize, rounds, log },
  selected = () => true,
) {
  const cluster = await startCluster({ settings: storeClusterSettings });
  pinToServerCore(cluster.pid());
  const memory = await emulatorProcess({ args: ["--signing-secret", secret] });
  const postgres = await emulatorProcess({ args: ["--database", cluster.url, "--signing-secret", secret] });
  let bare;
  try {
    const users = {
      memory: await seed(memory.url, log, "memory"),
      postgres: await seed(postgres.url, log, "postgres"),
    };
    // (`--scenarios login,login*`: only those, on both stores.)
    const lists = {
      memory: scenarios(users.memory).filter(selected),
      postgres: scenarios(users.postgres).filter(selected),
    };
    // The bare server answers what the in-memory emulator answered.
    const routes = {};
    const routeKey = (r) => `${r.method} ${r.path} ${r.body ?? ""}`;
    for (const s of lists.memory) routes[routeKey(s.request)] = await capture(memory.url, s.request);
    bare = await startBare(routes);
    const servers = { bare, memory, postgres };
    const results = Object.fromEntries(lists.memory.map((s) => [s.id, { bare: [], memory: [], postgres: [] }]));
    for (let round = 1; round <= rounds; round++) {
      for (const [index, s] of lists.memory.entries()) {
        const kinds = ["bare", "memory", "postgres"];
        // Rotate who goes first, so drift on the shared machine hits all three alike.
        const order = kinds.map((_, i) => kinds[(i + round) % kinds.length]);
        for (const which of order) {
          const scenario = which === "postgres" ? lists.postgres[index] : s;
          // On PostgreSQL the database's CPU (every process of the cluster) is measured too.
          const databaseBefore = which === "postgres" ? procTreeCpuMs(cluster.pid()) : 0;
          // (The bare server answers the first user's request whoever asks: it need not rotate.)
          const r = await load(servers[which], which === "bare" ? { ...scenario, rotate: undefined } : scenario);
          if (which === "postgres")
            r.databaseCpuUsPerRequest =
              ((procTreeCpuMs(cluster.pid()) - databaseBefore) * 1000) / Math.max(1, r.requests);
          results[s.id][which].push(r);
          if (which !== "bare") await cleanUp(servers[which], scenario, log);
          const fixed = (n) => (Number.isFinite(n) ? n.toFixed(2) : "–");
          log(
            `round ${round} ${s.id.padEnd(9)} ${which.padEnd(8)} ${Math.round(r.rps).toString().padStart(6)} req/s  ` +
              `p50 ${fixed(r.latency.p50)} ms  p99 ${fixed(r.latency.p99)} ms  ${Math.round(r.cpuUsPerRequest)} µs CPU/req` +
              (r.ok !== r.requests || r.errors ? `  (${r.requests - r.ok} non-2xx, ${r.errors} errors)` : ""),
          );
        }
      }
    }
    // One request at a time: each store's service time, free of queueing (Little's law).
    const single = {};
    for (const [index, s] of lists.memory.entries()) {
      single[s.id] = {};
      for (const which of ["memory", "postgres"]) {
        const scenario = which === "postgres" ? lists.postgres[index] : s;
        const r = await load(servers[which], scenario, { connections: 1 });
        single[s.id][which] = { p50: r.latency.p50, p99: r.latency.p99, p999: r.latency.p999 };
        await cleanUp(servers[which], scenario, log);
        log(
          `one at a time ${s.id.padEnd(9)} ${which.padEnd(8)} p50 ${r.latency.p50.toFixed(2)} ms  p99 ${r.latency.p99.toFixed(2)} ms`,
        );
      }
    }
    return lists.memory.map((s) => ({
      id: s.id,
      title: s.title,
      bare: summarize(results[s.id].bare),
      memory: summarize(results[s.id].memory),
      postgres: summarize(results[s.id].postgres),
      single: single[s.id],
    }));
  } finally {
    await bare?.stop();
    await memory.stop();
    await postgres.stop();
    await cluster.stop();
  }
}
