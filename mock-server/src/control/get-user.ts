import { findUser } from "./find-user.ts";
import { appOf, defineControlRoute } from "./route.ts";
import { registrationView, userView } from "./views.ts";

export default defineControlRoute("getUser", async (request) => {
  const app = appOf(request);
  const found = findUser(app, request.params.userId);
  return found.user ? userView(app, found.user) : registrationView(found.account);
});
