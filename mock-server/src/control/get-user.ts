import { findUser } from "./find-user.ts";
import { appOf, defineControlRoute } from "./route.ts";
import { registrationView, userView } from "./views.ts";

export default defineControlRoute("getUser", async (request) => {
  const app = await appOf(request);
  const found = await findUser(app, request.params.userId);
  return found.user ? await userView(app, found.user) : registrationView(found.account);
});
