import { accountOf } from "./emailjs-account.ts";
import { defineControlRoute } from "./route.ts";

/** The account's journal, oldest first (private keys redacted). */
export default defineControlRoute("listEmailJsRequests", async (request) => {
  const { operationId, status, search, limit } = request.query;
  return { requests: (await accountOf(request)).journal.list({ operationId, status, search, limit }) };
});
