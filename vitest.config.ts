import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

/**
 * One Vitest run over the workspaces (`npx vitest run`; `--project mock-server` for one of them).
 * Each project keeps its own settings in its own config file; a new suite with its own setup (a
 * database, say) is one more entry here, with its own `globalSetup` and `isolate` as it needs.
 */
export default defineConfig({
  test: {
    projects: [
      { test: { name: "openapi", root: "./openapi", include: ["test/**/*.test.ts"] } },
      "./mock-server/vitest.config.ts",
      "./web/vite.config.ts",
    ],
    // Vitest's default (cores − 1) is one worker on a two-core machine; many of the emulator's
    // slower tests wait on child processes, sockets and deadlines, so one worker per core keeps
    // both cores busy. More than that starves the tests that measure time limits.
    maxWorkers: Math.max(2, availableParallelism()),
  },
});
