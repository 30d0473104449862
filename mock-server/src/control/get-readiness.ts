import { defineControlRoute } from "./route.ts";

/** Whether this instance should get traffic: 200, or 503 with why (and when to ask again). */
export default defineControlRoute("getReadiness", async (request, reply) => {
  const readiness = await request.server.emulator.readiness();
  if (readiness.status !== "ready") reply.code(503).header("retry-after", "1");
  return readiness;
});
