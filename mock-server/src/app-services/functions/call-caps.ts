/**
 * The caps on a client's calls of the app's functions running at once on this instance — per
 * user (lower for an anonymous user) and per client address, whatever its users — so that no user
 * or address can take the function process all users share (its memory, its turn, its
 * `context.http` budget). The MongoDB service's actions run elsewhere and do not count: they take
 * turns per user instead (`takeActionTurn`). See docs/decisions/0018-fair-shares.md.
 */
import {
  defaultMaxFunctionCallsPerAddress,
  defaultMaxFunctionCallsPerAnonymousUser,
  defaultMaxFunctionCallsPerUser,
  defaultMaxMongoActionsPerUser,
  maxMongoActionsWaiting,
} from "../../config/app-config.ts";
import { appServicesErrors as errors } from "../../errors/catalogue.ts";
import { addressKey } from "../../http/client-address.ts";
import type { Leaving } from "../../runtime/action-turns.ts";
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

/**
 * A turn for a client's MongoDB action of `user` (without one, of client address `ip`): at once,
 * or once the caller's earlier actions let one go (runtime/action-turns.ts); refused (429) when
 * too many of the caller's wait already. Answers the function that ends the turn.
 */
export async function takeActionTurn(
  app: AppRuntime,
  user: StoredUser | null,
  ip: string,
  client: Leaving,
): Promise<(() => void) | null> {
  const running = app.config.maxMongoActionsPerUser ?? defaultMaxMongoActionsPerUser;
  const turn = app.actionTurns.take(
    user === null ? `address:${addressKey(ip)}` : `user:${user.id}`,
    { running, waiting: maxMongoActionsWaiting },
    client,
  );
  if (turn === null) throw errors.tooManyMongoActions(maxMongoActionsWaiting);
  return turn;
}
