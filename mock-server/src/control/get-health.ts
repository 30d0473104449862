import packageJson from "../../package.json" with { type: "json" };
import { defineControlRoute } from "./route.ts";

export default defineControlRoute("getHealth", async (request) => {
  const { emulator } = request.server;
  return {
    status: "ok" as const,
    version: packageJson.version,
    startedAt: new Date(emulator.startedAt).toISOString(),
    uptimeMs: Date.now() - emulator.startedAt,
  };
});
