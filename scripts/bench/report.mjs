// Writes a benchmark run into docs/benchmarks.md: the section between the `bench:start` and
// `bench:end` markers is replaced; everything around it (method notes, profiles, fixes, the
// soak report) is written by hand or by the soak script and kept.
import { existsSync, readFileSync, writeFileSync } from "node:fs";

const start = "<!-- bench:start -->";
const end = "<!-- bench:end -->";

const int = (n) => Math.round(n).toLocaleString("en-US");
const ms = (n) => (n < 10 ? n.toFixed(2) : n.toFixed(1));
const mark = (ok) => (ok ? "✅" : "❌");
/** Latency percentiles of a summary: p50 / p99 / p99.9. */
const pcts = (x) => `${ms(x.p50)} / ${ms(x.p99)} / ${Number.isFinite(x.p999) ? ms(x.p999) : "–"} ms`;

/** Replaces the text between two markers (appending the section when the markers are missing). */
export function replaceSection(file, startMarker, endMarker, body, fallbackHeading) {
  const text = existsSync(file) ? readFileSync(file, "utf8") : "# Benchmarks\n";
  const section = `${startMarker}\n${body.trim()}\n${endMarker}`;
  const from = text.indexOf(startMarker);
  const to = text.indexOf(endMarker);
  const next =
    from >= 0 && to > from
      ? `${text.slice(0, from)}${section}${text.slice(to + endMarker.length)}`
      : `${text.trimEnd()}\n\n${fallbackHeading}\n\n${section}\n`;
  writeFileSync(file, next);
}

export function renderResults(r) {
  const lines = [];
  const m = r.machine;
  lines.push(
    `Run of ${r.date.slice(0, 16).replace("T", " ")} UTC on ${m.cpu}${m.mhz ? ` (${m.mhz} MHz)` : ""}, ${m.cores} cores, ` +
      `${m.memoryGb} GB, Node ${m.node}; ${m.pinned ? "server pinned to core 0, load generator to core 1" : "not pinned (no taskset or one core)"}; ` +
      `${r.settings.connections} connections, ${r.settings.rounds} interleaved rounds of ${r.settings.duration} s ` +
      `(after ${r.settings.warmup} s of warm-up each), medians.`,
  );
  if (r.throughput) {
    lines.push("", "### Throughput and latency (50 connections)", "");
    lines.push(
      "| scenario | reply bytes | bare req/s | emulator req/s | ratio | emulator p50 / p99 / p99.9 | bare p50 / p99 / p99.9 | server CPU per request: bare / emulator | errors | target | met |",
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|:-:|",
    );
    for (const s of r.throughput) {
      const ratio = s.emulator.rps / s.bare.rps;
      let target = "p99 < 10 ms";
      let ok = s.emulator.p99 < 10;
      if (s.id === "profile" || s.id === "sum") {
        target = "≥ 0.5× bare, p99 < 10 ms";
        ok = ratio >= 0.5 && s.emulator.p99 < 10;
      } else if (s.id === "login") {
        target = "≥ 400/s on one core";
        ok = s.emulator.rps >= 400;
      }
      lines.push(
        `| ${s.title} | ${int(s.bytes)} | ${int(s.bare.rps)} | ${int(s.emulator.rps)} | ${ratio.toFixed(2)}× | ` +
          `${pcts(s.emulator)} | ${pcts(s.bare)} | ` +
          `${int(s.bare.cpuUsPerRequest)} / ${int(s.emulator.cpuUsPerRequest)} µs | ${s.emulator.errors} | ${target} | ${mark(ok)} |`,
      );
    }
    lines.push(
      "",
      `Per-round emulator req/s: ${r.throughput.map((s) => `${s.id} ${s.emulator.perRound.join(" / ")}`).join("; ")}.`,
    );
  }
  if (r.start) {
    const s = r.start;
    lines.push(
      "",
      "### Start-up",
      "",
      "| measure | median | min | max | target | met |",
      "|---|---:|---:|---:|---|:-:|",
      `| \`node mock-server/dist/cli.js\` spawned → first HTTP answer (${s.runs} starts) | ${int(s.median)} ms | ${int(s.min)} ms | ${int(s.max)} ms | < 400 ms | ${mark(s.median < 400)} |`,
    );
    const d = s.devStack;
    if (d)
      lines.push(
        `| the same with kept state (\`--data-dir\`) and a \`--config\` file, as \`npm start\` runs it (${d.runs} starts) | ${int(d.median)} ms | ${int(d.min)} ms | ${int(d.max)} ms | | |`,
      );
    const n = s.npmRunMock;
    if (n)
      lines.push(
        `| \`npm run mock\` (nothing changed) → first HTTP answer (${n.runs} starts) | ${int(n.median)} ms | ${int(n.min)} ms | ${int(n.max)} ms | < 1 s | ${mark(n.median < 1000)} |`,
      );
  }
  if (r.scale) {
    const { memory: mem, latency } = r.scale;
    const mb = (b) => `${(b / 2 ** 20).toFixed(1)} MB`;
    lines.push(
      "",
      "### Scale",
      "",
      "| measure | at " +
        `${int(mem.usersBefore)} users | at ${int(mem.usersAfter)} users | per added user | target | met |`,
      "|---|---:|---:|---:|---|:-:|",
      `| heap used (after full GC) | ${mb(mem.heapBefore)} | ${mb(mem.heapAfter)} | ${int(mem.heapPerUser)} B | < 2 KB | ${mark(mem.heapPerUser < 2048)} |`,
      `| RSS (/proc/<pid>/status) | ${mb(mem.rssBefore)} | ${mb(mem.rssAfter)} | ${int(mem.rssPerUser)} B | < 2 KB | ${mark(mem.rssPerUser < 2048)} |`,
    );
    const ratio = latency.many.mean / latency.few.mean;
    const ratio1 = latency.manySingle.p50 / latency.fewSingle.p50;
    lines.push(
      "",
      "| `GET /auth/profile`, tokens of users spread over the population | 1,000 users | 100,000 users | ratio | target | met |",
      "|---|---:|---:|---:|---|:-:|",
      `| 50 connections: req/s | ${int(latency.few.rps)} | ${int(latency.many.rps)} | ${(latency.many.rps / latency.few.rps).toFixed(2)}× | | |`,
      `| 50 connections: mean latency | ${ms(latency.few.mean)} ms | ${ms(latency.many.mean)} ms | ${ratio.toFixed(2)}× | ≤ 1.2× | ${mark(ratio <= 1.2)} |`,
      `| 50 connections: p99 | ${ms(latency.few.p99)} ms | ${ms(latency.many.p99)} ms | ${(latency.many.p99 / latency.few.p99).toFixed(2)}× | | |`,
      `| 1 connection: p50 (one request at a time) | ${latency.fewSingle.p50.toFixed(3)} ms | ${latency.manySingle.p50.toFixed(3)} ms | ${ratio1.toFixed(2)}× | ≤ 1.2× | ${mark(ratio1 <= 1.2)} |`,
      "",
      `Users were created by ${int(mem.usersAfter - mem.usersBefore)} anonymous logins at ${int(mem.loginRps)} req/s ` +
        "(each makes a user, its identity and a refresh-token session: the per-user figure includes the session).",
    );
  }
  if (r.stores) {
    lines.push(
      "",
      "### In-memory store and PostgreSQL store (same run, same data)",
      "",
      "The PostgreSQL server runs on the server's core with the emulator (the load generator has the other); " +
        "CPU per request is the emulator's process and, on PostgreSQL, the database's (every process of the cluster).",
      "",
      "| scenario | bare req/s | memory req/s | PostgreSQL req/s | PostgreSQL / memory | memory p50 / p99 / p99.9 | PostgreSQL p50 / p99 / p99.9 | CPU per request: memory / PostgreSQL emulator + database | errors | target | met |",
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|:-:|",
    );
    for (const s of r.stores) {
      const ratio = s.postgres.rps / s.memory.rps;
      let target = "";
      let ok = null;
      // A scenario of many users (`login*`) is held to its one-user scenario's target.
      const id = s.id.replace(/\*$/, "");
      if (id === "profile") {
        target = "≥ 0.5× memory";
        ok = ratio >= 0.5;
      } else if (id === "login") {
        target = "≥ 0.8× memory";
        ok = ratio >= 0.8;
      } else if (id === "find") {
        target = "p99 ≤ 30 ms on both, ≥ 0.5× memory";
        ok = s.postgres.p99 <= 30 && s.memory.p99 <= 30 && ratio >= 0.5;
      } else if (id === "insertOne") {
        target = "≥ 3,000/s";
        ok = s.postgres.rps >= 3000;
      }
      const database = s.postgres.databaseCpuUsPerRequest;
      lines.push(
        `| ${s.title} | ${int(s.bare.rps)} | ${int(s.memory.rps)} | ${int(s.postgres.rps)} | ${ratio.toFixed(2)}× | ` +
          `${pcts(s.memory)} | ${pcts(s.postgres)} | ` +
          `${int(s.memory.cpuUsPerRequest)} / ${int(s.postgres.cpuUsPerRequest)}${database === undefined ? "" : ` + ${int(database)}`} µs | ` +
          `${s.memory.errors + s.postgres.errors} | ${target} | ${ok === null ? "" : mark(ok)} |`,
      );
    }
    lines.push(
      "",
      `Per-round PostgreSQL req/s: ${r.stores.map((s) => `${s.id} ${s.postgres.perRound.join(" / ")}`).join("; ")}.`,
    );
    if (r.stores.every((s) => s.single)) {
      lines.push(
        "",
        `One request at a time (p50 / p99 / p99.9, memory → PostgreSQL): ${r.stores
          .map((s) => `${s.id} ${pcts(s.single.memory)} → ${pcts(s.single.postgres)}`)
          .join("; ")}.`,
      );
    }
  }
  return lines.join("\n");
}

export function writeReport(file, results) {
  replaceSection(file, start, end, renderResults(results), "## Latest run");
}
