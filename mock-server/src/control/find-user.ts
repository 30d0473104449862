import { controlErrors } from "../errors/catalogue.ts";
import type { AppRuntime } from "../runtime/app-runtime.ts";
import { type StoredUser, type StoredUserpassAccount, userLifetimeEnded } from "../store/store.ts";

export type Found = { user: StoredUser; account?: undefined } | { user?: undefined; account: StoredUserpassAccount };

/** A user object by id (not past its lifetime: then it is gone), or a registration without one by its id. */
export async function findUser(app: AppRuntime, id: string): Promise<Found> {
  const user = await app.users.get(id);
  if (user && !userLifetimeEnded(user, app.clock.now())) return { user };
  const account = await app.users.account(id);
  if (account && account.userId === null) return { account };
  throw noSuchUser(app, id);
}

export const noSuchUser = (app: AppRuntime, id: string) =>
  controlErrors.notFound(`no user with id '${id}' in app '${app.appId}'`);
