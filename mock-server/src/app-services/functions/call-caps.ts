/**
 * The caps on a client's calls of the app's functions running at once on this instance — per
 * user (lower for an anonymous user) and per client address, whatever its users — so that no user
 * or address can take the function process all users share (its memory, its turn, its
 * `context.http` budget). The MongoDB service's actions run elsewhere and do not count.
 * See docs/decisions/0018-fair-shares.md.
 */
import {
  defaultMaxFunctionCallsPerAddress,
  defaultMaxFunctionCallsPerAnonymousUser,
  defaultMaxFunctionCallsPerUser,
} from "../../config/app-config.ts";
import { appServicesErrors as errors } from "../../errors/catalogue.ts";
import { addressKey } from "../../http/client-address.ts";
import type { AppRuntime } from "../../runtime/app-runtime.ts";
import { isAnonymousUser, type StoredUser } from "../../store/store.ts";

/**
 * Takes a place for one call of `user` from client address `ip`, or refuses it (429) when a cap is
 * reached; answers the function that gives the place back, to be called once however the call ends.
 */
export function takeCallPlace(app: AppRuntime, user: StoredUser | null, ip: string): () => void {
  const { config } = app;
  const perUser = config.maxFunctionCallsPerUser ?? defaultMaxFunctionCallsPerUser;
  const perAnonymousUser = config.maxFunctionCallsPerAnonymousUser ?? defaultMaxFunctionCallsPerAnonymousUser;
  const anonymousCap = user !== null && isAnonymousUser(user) && perAnonymousUser < perUser;
  const userCap = anonymousCap ? perAnonymousUser : perUser;
  const addressCap = config.maxFunctionCallsPerAddress ?? defaultMaxFunctionCallsPerAddress;
  const address = addressKey(ip);
  const calls = app.functionCalls;
  // (A call run as system, an HTTPS endpoint's, counts for its address only.)
  const userKey = user === null ? "" : user.id;
  if (user !== null && calls.ofUser(userKey) >= userCap)
    throw errors.tooManyFunctionCalls(anonymousCap ? "an anonymous user" : "a user", userCap);
  if (calls.ofAddress(address) >= addressCap) throw errors.tooManyFunctionCalls("one address", addressCap);
  calls.take(userKey, address);
  let given = false;
  return () => {
    if (given) return;
    given = true;
    calls.give(userKey, address);
  };
}
