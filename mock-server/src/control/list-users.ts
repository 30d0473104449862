import { appOf, defineControlRoute } from "./route.ts";
import { newestUserViews } from "./views.ts";

export default defineControlRoute("listUsers", async (request) =>
  // (The validator fills in the document's default, 1,000; the type keeps it optional.)
  newestUserViews(await appOf(request), request.query.limit ?? 1000),
);
