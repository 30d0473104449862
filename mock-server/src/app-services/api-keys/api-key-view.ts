import { appServicesErrors as errors } from "../../errors/catalogue.ts";
import type { StoredApiKey } from "../../store/store.ts";
import type { Caller } from "../auth-context.ts";

/** A key as the service shows it: a plain hex `_id`, never the secret. */
export const apiKeyView = (key: StoredApiKey) => ({ _id: key.id, name: key.name, disabled: key.disabled });

/** The caller's key with this id (another user's key is "not found", as on the service). */
export async function ownKey(caller: Caller, id: string): Promise<StoredApiKey> {
  const key = await caller.app.apiKeys.get(id);
  if (!key || key.userId !== caller.user.id) throw errors.apiKeyNotFound();
  return key;
}
