import { appOf, defineControlRoute } from "./route.ts";

export default defineControlRoute("clearRequests", async (request, reply) => {
  (await appOf(request)).journal.clear();
  return reply.code(204).send();
});
