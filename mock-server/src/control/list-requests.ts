import { appOf, defineControlRoute } from "./route.ts";

/** The app's journal, oldest first, optionally one operation's, one status's or those mentioning a text (secrets already redacted). */
export default defineControlRoute("listRequests", async (request) => {
  const { operationId, status, search, limit } = request.query;
  return { requests: (await appOf(request)).journal.list({ operationId, status, search, limit }) };
});
