import { defineConfig } from "vitest/config";
import base, { heldTimeFiles } from "./vitest.config.ts";

/** The in-memory store's files that measure held time, each in a fresh worker (see heldTimeFiles). */
export default defineConfig({
  test: {
    ...base.test,
    name: "mock-server (isolated)",
    include: heldTimeFiles,
    exclude: [],
    isolate: true,
  },
});
