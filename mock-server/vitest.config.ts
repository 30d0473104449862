import { defineConfig } from "vitest/config";

/**
 * Files that measure how long the server's main thread is held (the attack suites): in a worker
 * shared with other files, the collections of their leftover heap count as held time, so these
 * run isolated, in a project of their own (vitest.isolated.config.ts). They run beside other files,
 * not alone at the end: they measure the main thread's own CPU time and other clients' waits against
 * a quiet moment of the same run, which a file on the other core does not push near their bounds
 * (nine in ten waits 6–18 ms against 100 ms, both stores, 2026-11-26).
 */
export const heldTimeFiles = ["test/data/hostile-evaluation.test.ts", "test/app-services/hostile-users.test.ts"];

export default defineConfig({
  test: {
    name: "mock-server",
    include: ["test/**/*.test.ts"],
    // The PostgreSQL-only tests are a project of their own (vitest.postgres.config.ts).
    exclude: ["test/postgres/**", ...heldTimeFiles],
    // Removes the file's scratch folders when it ends (test/helpers/scratch.ts).
    setupFiles: ["test/setup.ts"],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    // Test files share a worker's loaded modules instead of importing Fastify, Ajv and the emulator
    // again per file (that import was half the run's CPU). They can: every file builds its own
    // emulator (buildApp, ~10 ms), the emulator keeps no state in modules, and the one file that
    // replaces globals (emailjs/sdk.test.ts) puts them back. A suite that needs a fresh module
    // graph per file belongs in a project of its own with `isolate: true`.
    isolate: false,
  },
});
