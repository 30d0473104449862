import { deployment } from "../../config/deployment.ts";
import { publicOrigin } from "../../http/areas.ts";
import { defineRoute, sendJson } from "../route.ts";

/** The emulator's own origin as `hostname`: clients use it as the base of every later request. */
export default defineRoute("getLocation", "none", async (request, reply) => {
  const origin = publicOrigin(request);
  return sendJson(reply, 200, {
    deployment_model: deployment.model,
    location: deployment.location,
    hostname: origin,
    ws_hostname: origin.replace(/^http/, "ws"),
  });
});
