import { defineConfig } from "vitest/config";
import { heldTimeFiles } from "./vitest.config.ts";
import postgres from "./vitest.postgres.config.ts";

/** The attack suites on the PostgreSQL store, each in a fresh worker (see heldTimeFiles). */
export default defineConfig({
  test: {
    ...postgres.test,
    name: "mock-server (postgres, isolated)",
    include: heldTimeFiles,
    exclude: [],
    isolate: true,
  },
});
