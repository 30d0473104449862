import { appServicesErrors as errors } from "../../errors/catalogue.ts";
import { defineRoute, sendEmpty } from "../route.ts";
import { requireProvider, tokenError } from "./userpass.ts";

export default defineRoute("confirmUser", "none", async (request, reply) => {
  const app = request.appRuntime!;
  requireProvider(app);
  const { token, tokenId } = request.body;
  const result = app.authTokens.consume("confirm", token, tokenId, app.clock.now());
  if (!result.ok) throw tokenError(result.reason);
  const account = app.users.accountByEmailAddress(result.token.email);
  if (!account) throw errors.invalidTokenData();
  if (account.confirmed) throw errors.alreadyConfirmed();
  account.confirmed = true;
  request.server.emulator.events.emit({ type: "user", appId: app.appId, action: "confirmed", id: account.id });
  return sendEmpty(reply, 200);
});
