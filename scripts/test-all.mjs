#!/usr/bin/env node
// `npm test`: everything, in order, failing fast: lint and formatting, the OpenAPI documents, the
// compose file and the CI workflow, type checks, unit and contract tests (generated code staleness
// included), the builds (web bundle budget included), then the hermetic end-to-end suite and the
// production rehearsal (scripts/rehearse.mjs) side by side.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
// `npm test -- lint unit`: only the steps whose names start so; `--no-e2e`: all but the steps with a
// browser, the e2e suite and the rehearsal (CI runs those as jobs of their own, .github/workflows/ci.yml).
const args = process.argv.slice(2);
const withoutE2e = args.includes("--no-e2e");
const only = args.filter((arg) => arg !== "--no-e2e");

// The web app's settings for a deployment elsewhere (nothing listens on port 9). The bundle-budget
// build below uses them, and the e2e suite runs with them in its environment: it must pass anyway,
// because it builds and configures the app for its own emulator whatever was built before.
const foreignWebConfig = {
  VITE_APP_SERVICES_BASE_URL: "http://127.0.0.1:9",
  VITE_APP_SERVICES_APP_ID: "someone-elses-app",
  VITE_EMAILJS_ORIGIN: "http://127.0.0.1:9",
  VITE_EMAILJS_PUBLIC_KEY: "someone-elses-key",
  VITE_EMAILJS_SERVICE_ID: "service_elsewhere",
  VITE_EMAILJS_CONTACT_TEMPLATE_ID: "template_elsewhere",
  VITE_EMAILJS_NOTE_TEMPLATE_ID: "template_elsewhere",
};

const bin = (name) => join(root, "node_modules", ".bin", name);
/** A step; `env` may be a function of the names of the steps that passed before it. */
const step = (name, command, args, env = {}) => ({ name, command, args, env });
const passed = new Set();

/**
 * Phases run in order, and the first that fails ends the run. The steps of a phase run at the same
 * time, each printed when it ends: the static checks and builds measure no time, so they share the
 * cores. The unit tests run alone (some of them check time limits and deadlines), then the e2e suite
 * and the rehearsal side by side (each keeps about one core busy: 55–59 s together, 71 s one after
 * the other).
 */
const phases = [
  [
    step("lint", bin("biome"), ["check", "."]),
    step("openapi lint", bin("redocly"), [
      "lint",
      "--config",
      "openapi/redocly.yaml",
      "openapi/app-services.yaml",
      "openapi/emailjs.yaml",
      "openapi/mock-control.yaml",
    ]),
    step("compose lint", bin("dclint"), ["docker-compose.yml"]),
    step("workflow lint", "node", ["scripts/lint-workflows.mjs"]),
    // Every workspace in one process (tsconfig.json's project references), with the native
    // compiler (TypeScript 7; docs/decisions/0015).
    step("typecheck", "node", [join(root, "node_modules", "typescript-native", "bin", "tsc"), "-b"]),
    step("build mock-server", "node", ["mock-server/scripts/build.mjs"]),
    step("build web", "npm", ["run", "build", "-w", "web"], foreignWebConfig),
    // The PostgreSQL store's tests run against a real server: its binaries, found or installed here.
    step("postgres", "node", ["scripts/postgres-cluster.mjs", "--check"]),
    // realm-web's browser sign-in runs in a real Chromium in the unit tests too (and the e2e suite).
    step("browser", "node", ["scripts/ensure-browser.mjs"]),
    // The proxy tests and the rehearsal run nginx and Caddy: found or installed here.
    step("proxies", "node", ["scripts/proxies.mjs", "--check"]),
  ],
  // One run over the openapi, mock-server and web projects (vitest.config.ts).
  [step("unit", bin("vitest"), ["run"])],
  // `npm run e2e`: finds Chromium, builds the emulator (when a source changed) and the web app for
  // the suite, runs it. When this run built web/dist from the current sources, the suite serves
  // that build (made for another deployment: its pages get the suite's settings at run time) and
  // skips its own.
  // Beside it, `npm run rehearse`: the production deployment (PostgreSQL, two instances, nginx,
  // SMTP) and the web app's @production journeys in Chromium, faults included; it reuses the
  // emulator's bundle and builds the web app into a folder of its own.
  [
    step("e2e", "node", ["scripts/e2e.mjs"], () => ({
      ...foreignWebConfig,
      CI: process.env.CI ?? "1",
      ...(passed.has("build web") ? { E2E_WEB_DIST: join(root, "web", "dist") } : {}),
    })),
    step("rehearsal", "node", ["scripts/rehearse.mjs"], { CI: process.env.CI ?? "1" }),
  ],
];

/** The steps that run a browser. */
const browserSteps = new Set(["e2e", "rehearsal"]);

const seconds = (since) => `${((Date.now() - since) / 1000).toFixed(1)}s`;

/**
 * CPU time (user + system) of the finished child processes so far, in seconds, where the system
 * tells it (Linux): on a machine others use too it says more of a change than the wall time does.
 */
function childrenCpu() {
  try {
    const fields = readFileSync("/proc/self/stat", "utf8").split(") ")[1].split(" ");
    return (Number(fields[13]) + Number(fields[14])) / 100;
  } catch {
    return null;
  }
}

/** Runs a step; alone, its output streams; beside others, it is kept and printed when the step ends. */
function run({ name, command, args, env }, alone) {
  const t = Date.now();
  if (alone) process.stdout.write(`\n▶ ${name}\n`);
  const child = spawn(command, args, {
    cwd: root,
    env: { ...process.env, ...(typeof env === "function" ? env(passed) : env) },
    stdio: alone ? "inherit" : ["ignore", "pipe", "pipe"],
  });
  const output = [];
  child.stdout?.on("data", (chunk) => output.push(chunk));
  child.stderr?.on("data", (chunk) => output.push(chunk));
  return new Promise((resolve) => {
    child.on("close", (code, signal) => {
      if (!alone) process.stdout.write(`\n▶ ${name}\n${Buffer.concat(output).toString()}`);
      if (code === 0) {
        passed.add(name);
        process.stdout.write(`✔ ${name} (${seconds(t)})\n`);
      } else process.stderr.write(`\n✖ ${name} failed after ${seconds(t)} (exit ${code ?? signal})\n`);
      resolve(code === 0);
    });
  });
}

const started = Date.now();
const cpuAtStart = childrenCpu();
const cpu = (since) => (since === null ? "" : `, ${(childrenCpu() - since).toFixed(1)}s CPU`);
for (const phase of phases) {
  const selected = phase.filter(
    ({ name }) =>
      (only.length === 0 || only.some((o) => name.startsWith(o))) && !(withoutE2e && browserSteps.has(name)),
  );
  if (selected.length === 0) continue;
  const phaseStarted = Date.now();
  const cpuAtPhase = childrenCpu();
  const results = await Promise.all(selected.map((s) => run(s, selected.length === 1)));
  process.stdout.write(`  (${selected.map((s) => s.name).join(", ")}: ${seconds(phaseStarted)}${cpu(cpuAtPhase)})\n`);
  if (results.includes(false)) process.exit(1);
}
process.stdout.write(`\nAll checks passed in ${seconds(started)}${cpu(cpuAtStart)}\n`);
