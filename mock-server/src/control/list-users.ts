import { appOf, defineControlRoute } from "./route.ts";
import { newestUserViews } from "./views.ts";

/** The listing's default page: the newest 1,000 (the document's `limit`). */
const defaultLimit = 1000;

export default defineControlRoute("listUsers", async (request) => {
  const { limit } = request.query as { limit?: number };
  return newestUserViews(await appOf(request), limit ?? defaultLimit);
});
