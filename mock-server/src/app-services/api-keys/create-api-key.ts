import { appServicesErrors as errors } from "../../errors/catalogue.ts";
import { newObjectIdHex, randomHex, sha256Hex } from "../../state/ids.ts";
import { defineRoute, sendJson } from "../route.ts";

export const maxApiKeysPerUser = 20;
/** A key's name, at most (kept with the user: 20 keys of an 18 MB body's name would be 360 MB). */
export const maxApiKeyNameLength = 256;
const namePattern = /^[A-Za-z0-9_-]+$/;

/** Creates a key; its secret appears in this reply only (the emulator keeps its hash). */
export default defineRoute("createApiKey", "refresh", async (request, reply) => {
  const { app, user } = request.caller!;
  const name = request.body.name;
  if (typeof name !== "string" || name === "") throw errors.requiredString("name");
  if (!namePattern.test(name)) throw errors.apiKeyInvalidName();
  if (name.length > maxApiKeyNameLength) throw errors.apiKeyNameTooLong(maxApiKeyNameLength);
  if (user.identities.every((i) => i.provider_type === "anon-user")) throw errors.apiKeyAnonymous();
  const secret = randomHex(32);
  const key = {
    id: newObjectIdHex(),
    userId: user.id,
    name,
    disabled: false,
    keyHash: sha256Hex(secret),
    createdAt: app.clock.now(),
  };
  // The store decides, in one step with every instance's concurrent creations: a name once per user, 20 keys.
  const added = await app.apiKeys.add(key, maxApiKeysPerUser);
  if (added === "limit") throw errors.apiKeyLimit(maxApiKeysPerUser);
  if (added === "name-taken") throw errors.apiKeyExists(name);
  // Deleted while this request was on its way: as if its session had been checked a moment later.
  if (added === "no-user") throw errors.sessionUserGone();
  request.server.emulator.events.emit({ type: "user", appId: app.appId, action: "api-key-created", id: user.id });
  return sendJson(reply, 201, { _id: key.id, key: secret, name, disabled: false });
});
