import packageJson from "../../package.json" with { type: "json" };
import { defineControlRoute } from "./route.ts";

/** The health check's body for a server running since `startedAt` (also while it starts: server.ts). */
export function healthOf(startedAt: number) {
  return {
    status: "ok" as const,
    version: packageJson.version,
    startedAt: new Date(startedAt).toISOString(),
    uptimeMs: Date.now() - startedAt,
  };
}

export default defineControlRoute("getHealth", async (request) => healthOf(request.server.emulator.startedAt));
