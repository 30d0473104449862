import { controlErrors } from "../errors/catalogue.ts";
import type { AppRuntime } from "../state/app-runtime.ts";
import type { StoredUser, StoredUserpassAccount } from "../state/users.ts";

export type Found = { user: StoredUser; account?: undefined } | { user?: undefined; account: StoredUserpassAccount };

/** A user object by id, or a registration without one by its id. */
export function findUser(app: AppRuntime, id: string): Found {
  const user = app.users.user(id);
  if (user) return { user };
  const account = app.users.account(id);
  if (account && account.userId === null) return { account };
  throw controlErrors.notFound(`no user with id '${id}' in app '${app.appId}'`);
}
