#!/usr/bin/env node
// `npm test`: everything, in order, failing fast: lint and formatting, the OpenAPI documents, the
// compose file and the CI workflow, type checks, unit and contract tests (generated code staleness
// included), the builds (web bundle budget included), then the hermetic end-to-end suite.
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
// `npm test -- lint unit`: only the steps whose names start so; `--no-e2e`: all but the e2e suite
// (CI's job without a browser, .github/workflows/ci.yml).
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

const steps = [
  ["lint", "npx", ["biome", "check", "."]],
  [
    "openapi lint",
    "npx",
    [
      "redocly",
      "lint",
      "--config",
      "openapi/redocly.yaml",
      "openapi/app-services.yaml",
      "openapi/emailjs.yaml",
      "openapi/mock-control.yaml",
    ],
  ],
  ["compose lint", "npx", ["dclint", "docker-compose.yml"]],
  ["workflow lint", "node", ["scripts/lint-workflows.mjs"]],
  // Every workspace in one process (tsconfig.json's project references).
  ["typecheck", "npx", ["tsc", "-b"]],
  ["build mock-server", "node", ["mock-server/scripts/build.mjs"]],
  // One run over the openapi, mock-server and web projects (vitest.config.ts).
  ["unit", "npx", ["vitest", "run"]],
  ["build web", "npm", ["run", "build", "-w", "web"], foreignWebConfig],
  // `npm run e2e`: finds Chromium, builds the emulator and the web app for the suite, runs it.
  ["e2e", "node", ["scripts/e2e.mjs"], { ...foreignWebConfig, CI: process.env.CI ?? "1" }],
];

const started = Date.now();
for (const [name, command, args, env] of steps) {
  if (only.length > 0 && !only.some((o) => name.startsWith(o))) continue;
  if (withoutE2e && name === "e2e") continue;
  const t = Date.now();
  process.stdout.write(`\n▶ ${name}\n`);
  const result = spawnSync(command, args, { cwd: root, stdio: "inherit", env: { ...process.env, ...env } });
  const seconds = ((Date.now() - t) / 1000).toFixed(1);
  if (result.status !== 0) {
    process.stderr.write(`\n✖ ${name} failed after ${seconds}s (exit ${result.status ?? result.signal})\n`);
    process.exit(result.status || 1);
  }
  process.stdout.write(`✔ ${name} (${seconds}s)\n`);
}
process.stdout.write(`\nAll checks passed in ${((Date.now() - started) / 1000).toFixed(1)}s\n`);
