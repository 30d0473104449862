import { readdirSync, readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";

const web = join(dirname(fileURLToPath(import.meta.url)), "web");

/**
 * The web app's test files that replace modules with vi.mock: they run isolated, because in a
 * module graph shared with other files the replacement would reach those files too. The others
 * share a worker's modules (they keep no state there: storage comes from fakes, rendered trees are
 * cleaned up after each test), which saves a module import per file. Their page is happy-dom's
 * (web/vite.config.ts): it sets up in ~0.4 s where jsdom took ~1 s a file.
 */
const webTests = readdirSync(join(web, "src"), { recursive: true, encoding: "utf8" })
  .filter((file) => /\.test\.tsx?$/.test(file))
  .map((file) => `src/${file}`);
const mocks = (file: string) => /\bvi\.(do)?mock\(/.test(readFileSync(join(web, file), "utf8"));
const webMocking = webTests.filter(mocks);
const webShared = webTests.filter((file) => !mocks(file));

/**
 * The order files run in. Vitest's own order keeps each project's files together (a worker is reused
 * only for the next file of its own project: a file of another project in between costs a new
 * worker, which imports Fastify, Ajv and the emulator again) and, once it has an earlier run's
 * timings (node_modules/.vite), puts the longest first; a clean clone has none. Within its project,
 * a file that spends most of its time waiting on child processes and timers (the emulator killed in
 * the middle of saves or of traffic, its periodic save, emulator processes on one database, start-up
 * option checks, a parser's stall timeout, stream places' leases running out, streams' heartbeats
 * through proxies, the launcher's code cache written 2 s into a start) starts first, so its waits
 * overlap the project's other files instead of ending its part of the run alone.
 *
 * Before all of them, the longest files of the run, longest first (`aheadOfAll`: the attack suites
 * on each store, 20–57 s each). Run in their projects' turns, the last of them ended the run alone
 * on one core for 20–30 s; started first, the other files fill the cores after them and the run
 * ends with short files on both.
 */
const aheadOfAll = [
  ["mock-server (postgres, isolated)", "mock-server/test/app-services/hostile-users.test.ts"],
  ["mock-server (isolated)", "mock-server/test/app-services/hostile-users.test.ts"],
  ["mock-server (postgres, isolated)", "mock-server/test/data/hostile-evaluation.test.ts"],
  ["mock-server (isolated)", "mock-server/test/data/hostile-evaluation.test.ts"],
] as const;
const startFirst = [
  "mock-server/test/persistence-crash.test.ts",
  "mock-server/test/code-cache.test.ts",
  "mock-server/test/proxy/proxies.test.ts",
  "mock-server/test/runtime/persistence.test.ts",
  "mock-server/test/cli-options.test.ts",
  "mock-server/test/emailjs/send-form-stall.test.ts",
  "mock-server/test/postgres/durability.test.ts",
  "mock-server/test/postgres/production.test.ts",
  "mock-server/test/postgres/cli.test.ts",
  "mock-server/test/postgres/multi-instance.test.ts",
  "mock-server/test/postgres/stream-places.test.ts",
  "scripts/test/dev-stack.test.ts",
];
class WaitingFilesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]) {
    const rank = (file: TestSpecification) => {
      const index = startFirst.findIndex((path) => file.moduleId.endsWith(path));
      return index === -1 ? startFirst.length : index;
    };
    const ahead = (file: TestSpecification) => {
      const index = aheadOfAll.findIndex(([name, path]) => file.project.name === name && file.moduleId.endsWith(path));
      return index === -1 ? aheadOfAll.length : index;
    };
    const sorted = await super.sort(files);
    const projects = [...new Set(sorted.map((file) => file.project.name))];
    const project = (file: TestSpecification) => projects.indexOf(file.project.name);
    return sorted.sort((a, b) => ahead(a) - ahead(b) || project(a) - project(b) || rank(a) - rank(b));
  }
}

/**
 * One Vitest run over the workspaces (`npx vitest run`; `--project mock-server` for one of them).
 * Each workspace keeps its settings in its own config file; a new suite with its own setup (a
 * database, say) is one more entry here, with its own `globalSetup` and `isolate` as it needs.
 */
export default defineConfig({
  test: {
    projects: [
      { test: { name: "openapi", root: "./openapi", include: ["test/**/*.test.ts"] } },
      { test: { name: "scripts", root: "./scripts", include: ["test/**/*.test.ts"], testTimeout: 30_000 } },
      "./mock-server/vitest.config.ts",
      "./mock-server/vitest.isolated.config.ts",
      "./mock-server/vitest.postgres.config.ts",
      "./mock-server/vitest.postgres-isolated.config.ts",
      { extends: "./web/vite.config.ts", root: "./web", test: { name: "web", exclude: webMocking, isolate: false } },
      { extends: "./web/vite.config.ts", root: "./web", test: { name: "web (isolated)", exclude: webShared } },
    ],
    // Vitest's default (cores − 1) is one worker on a two-core machine. Many of the emulator's
    // slower tests wait on child processes, sockets and deadlines: with one worker per core the
    // cores were idle a fifth of the phase; one more worker keeps them busy (2 cores: 196–203 s
    // against 224 s, the same CPU; a fourth gained nothing more: decision 0007). The attack
    // suites measure the main thread's own CPU time, which other workers' load does not add to.
    maxWorkers: Math.max(3, availableParallelism() + 1),
    sequence: { sequencer: WaitingFilesFirst },
  },
});
