import { appOf, defineControlRoute } from "./route.ts";
import { appDetails } from "./views.ts";

export default defineControlRoute("getApp", async (request) =>
  appDetails(request.server.emulator, await appOf(request)),
);
