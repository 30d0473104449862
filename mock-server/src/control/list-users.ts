import { appOf, defineControlRoute } from "./route.ts";
import { allUserViews } from "./views.ts";

export default defineControlRoute("listUsers", async (request) => ({ users: allUserViews(appOf(request)) }));
