import { defineControlRoute } from "./route.ts";
import { appSummary } from "./views.ts";

export default defineControlRoute("listApps", async (request) => {
  const { emulator } = request.server;
  return { apps: await Promise.all((await emulator.apps.list()).map((app) => appSummary(emulator, app))) };
});
