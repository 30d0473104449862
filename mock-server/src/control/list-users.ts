import { emailSearch } from "../store/store.ts";
import { appOf, defineControlRoute } from "./route.ts";
import { newestUserViews } from "./views.ts";

export default defineControlRoute("listUsers", async (request) => {
  const { limit, email } = request.query;
  // (The validator fills in the document's default, 1,000; the type keeps it optional.)
  return newestUserViews(await appOf(request), limit ?? 1000, email === undefined ? undefined : emailSearch(email));
});
