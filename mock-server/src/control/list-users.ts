import { appOf, defineControlRoute } from "./route.ts";
import { allUserViews } from "./views.ts";

export default defineControlRoute("listUsers", async (request) => ({
  users: await allUserViews(await appOf(request)),
}));
