import react from "@vitejs/plugin-react";
import { defineConfig } from "vitest/config";

// Dev server and preview on fixed loopback ports (the e-mail links of the emulator's default app
// point at 127.0.0.1:5173). The manifest lets scripts/check-bundle-size.mjs find the first-load chunks.
export default defineConfig({
  plugins: [react()],
  server: { host: "127.0.0.1", port: 5173, strictPort: true },
  preview: { host: "127.0.0.1", port: 4173, strictPort: true },
  build: { target: "es2022", manifest: true, sourcemap: true },
  test: {
    environment: "jsdom",
    include: ["src/**/*.test.{ts,tsx}"],
    restoreMocks: true,
  },
});
