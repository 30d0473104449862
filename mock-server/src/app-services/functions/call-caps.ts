/**
 * The caps on a client's calls of the app's functions running at once on this instance — per
 * user (lower for an anonymous user) and per client address, whatever its users — so that no user
 * or address can take the function process all users share (its memory, its turn, its
 * `context.http` budget). The MongoDB service's actions run elsewhere and do not count: they take
 * turns per user and per address instead (`takeActionTurn`). See docs/decisions/0018-fair-shares.md.
 */
import {
  defaultMaxFunctionCallsPerAddress,
  defaultMaxFunctionCallsPerAnonymousUser,
  defaultMaxFunctionCallsPerUser,
  defaultMaxMongoActionsPerAddress,
  defaultMaxMongoActionsPerUser,
  maxMongoActionsWaiting,
} from "../../config/app-config.ts";
import type { EmulatorOptions } from "../../config/options.ts";
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
 * A turn for a client's MongoDB action of `user` from client address `ip`: its user's turn (when
 * it has one), then its address's, whatever its users — at once, or once the line's earlier
 * actions let one go (runtime/action-turns.ts). So one user's flood waits behind itself, and so
 * does one address's, however many users it signs in. Refused (429) when too many wait in either
 * line already. Answers the function that ends the turn, or null when the client left meanwhile.
 */
export async function takeActionTurn(
  app: AppRuntime,
  user: StoredUser | null,
  ip: string,
  client: Leaving,
  options: Pick<EmulatorOptions, "databaseUrl" | "databasePoolSize">,
): Promise<(() => void) | null> {
  // On a database, by default no address (nor user) runs more actions at once than half the
  // connections: the others' actions always find one (an address's 32 held all 20, and everyone
  // else's waited for a connection, timed out, or answered that the database could not be
  // reached). An app's own setting is taken as it is.
  const share =
    options.databaseUrl === null ? Number.POSITIVE_INFINITY : Math.max(1, Math.floor(options.databasePoolSize / 2));
  const perUser = app.config.maxMongoActionsPerUser ?? Math.min(share, defaultMaxMongoActionsPerUser);
  const perAddress = app.config.maxMongoActionsPerAddress ?? Math.min(share, defaultMaxMongoActionsPerAddress);
  const waiting = maxMongoActionsWaiting;
  const userTurn =
    user === null ? noTurn : app.actionTurns.take(`user:${user.id}`, { running: perUser, waiting }, client);
  if (userTurn === null) throw errors.tooManyMongoActions("a user", waiting);
  const endUserTurn = await userTurn;
  if (endUserTurn === null) return null;
  const addressTurn = app.actionTurns.take(`address:${addressKey(ip)}`, { running: perAddress, waiting }, client);
  if (addressTurn === null) {
    endUserTurn();
    throw errors.tooManyMongoActions("one address", waiting);
  }
  const endAddressTurn = await addressTurn;
  if (endAddressTurn === null) {
    endUserTurn();
    return null;
  }
  return () => {
    endAddressTurn();
    endUserTurn();
  };
}

const noTurn = () => undefined;
