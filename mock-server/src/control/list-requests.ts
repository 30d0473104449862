import { appOf, defineControlRoute } from "./route.ts";

/** The app's journal, oldest first, optionally one operation's or one status's (secrets already redacted). */
export default defineControlRoute("listRequests", async (request) => {
  const { operationId, status, limit } = request.query;
  return { requests: (await appOf(request)).journal.list({ operationId, status, limit }) };
});
