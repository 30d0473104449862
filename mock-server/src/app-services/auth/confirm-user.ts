import { appServicesErrors as errors } from "../../errors/catalogue.ts";
import { defineRoute, sendEmpty } from "../route.ts";
import { accountOfToken, refuseUnknownLink, requireProvider, tokenError } from "./userpass.ts";

export default defineRoute("confirmUser", "none", async (request, reply) => {
  const app = request.appRuntime!;
  requireProvider(app);
  const { token, tokenId } = request.body;
  refuseUnknownLink(token, tokenId);
  const now = app.clock.now();
  // The token's registration first: one gone since (deleted, or refused by the confirmation
  // function, which was given the token) answers as an unknown token, and a refused request uses
  // nothing up. Then the pair is used up (of racing confirmations, one).
  const checked = await app.authTokens.check("confirm", token, tokenId, now);
  if (!checked.ok) throw tokenError(checked.reason);
  const account = await accountOfToken(app, checked.token);
  if (!account) throw errors.invalidTokenData();
  const result = await app.authTokens.consume("confirm", token, tokenId, now);
  if (!result.ok) throw tokenError(result.reason);
  if (!(await app.users.confirmAccount(account.id))) {
    // Confirmed already, or deleted meanwhile (here or on another instance): as a moment later.
    const now = await accountOfToken(app, result.token);
    throw now?.id === account.id ? errors.alreadyConfirmed() : errors.invalidTokenData();
  }
  request.server.emulator.events.emit({ type: "user", appId: app.appId, action: "confirmed", id: account.id });
  return sendEmpty(reply, 200);
});
