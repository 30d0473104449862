import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import react from "@vitejs/plugin-react";
import { loadEnv } from "vite";
import { defineConfig } from "vitest/config";
import harnessDefaults from "./src/config/harness-defaults.json" with { type: "json" };

const here = dirname(fileURLToPath(import.meta.url));

/**
 * The local harness's values (the emulator on 127.0.0.1:4000, its default app and EmailJS account)
 * of the VITE_ variables this build was not given: only those go into the bundle, so a deployment
 * that gives every variable carries nothing of the harness (scripts/check-no-harness-defaults.mjs).
 */
function harnessDefaultsFor(mode: string): Record<string, string> {
  const env = loadEnv(mode, here, "VITE_");
  return Object.fromEntries(Object.entries(harnessDefaults).filter(([name]) => !env[name]?.trim()));
}

// Dev server and preview on fixed loopback ports (the e-mail links of the emulator's default app
// point at 127.0.0.1:5173). The manifest lets scripts/check-bundle-size.mjs find the first-load chunks.
// Source maps are written beside the bundle for whoever debugs a build, but not named by it: a
// browser does not fetch them, and a site need not serve them (they hold the whole source).
export default defineConfig(({ mode }) => ({
  plugins: [react()],
  define: { __HARNESS_DEFAULTS__: JSON.stringify(harnessDefaultsFor(mode)) },
  server: { host: "127.0.0.1", port: 5173, strictPort: true },
  preview: { host: "127.0.0.1", port: 4173, strictPort: true },
  build: { target: "es2022", manifest: true, sourcemap: "hidden" },
  test: {
    environment: "happy-dom",
    include: ["src/**/*.test.{ts,tsx}"],
    restoreMocks: true,
  },
}));
