/** How the control API shows the emulator's records (the control document's User, AppDetails…). */
import type { ControlSchemas } from "../openapi/types.ts";
import type { AppRuntime } from "../runtime/app-runtime.ts";
import type { Emulator } from "../runtime/emulator.ts";
import { clockView } from "../state/clock.ts";
import { suspensionViews } from "../store/state-import.ts";
import {
  type EmailSearch,
  type StoredApiKey,
  type StoredSession,
  type StoredUser,
  type StoredUserpassAccount,
  userLifetimeEnded,
} from "../store/store.ts";
import { iso } from "./route.ts";

type User = ControlSchemas["User"];
type AppConfig = ControlSchemas["AppConfig"];

export async function userView(app: AppRuntime, user: StoredUser): Promise<User> {
  const [email, sessions, apiKeys] = await Promise.all([
    app.users.emailOf(user),
    app.sessions.forUser(user.id),
    app.apiKeys.forUser(user.id),
  ]);
  return userViewOf(user, email, sessions, apiKeys);
}

/** A user object as shown, with the e-mail of its e-mail/password identity, its sessions and keys. */
function userViewOf(
  user: StoredUser,
  ownEmail: string | undefined,
  sessions: StoredSession[],
  apiKeys: StoredApiKey[],
): User {
  const email = ownEmail ?? (typeof user.data.email === "string" ? user.data.email : undefined);
  return {
    id: user.id,
    status: "active",
    type: user.type,
    ...(email !== undefined ? { email } : {}),
    ...(typeof user.data.name === "string" ? { name: user.data.name } : {}),
    disabled: user.disabled,
    createdAt: iso(user.createdAt),
    ...(user.lastLoginAt !== undefined ? { lastLoginAt: iso(user.lastLoginAt) } : {}),
    identities: user.identities.map((i) => ({ id: i.id, provider_type: i.provider_type, provider_id: i.provider_id })),
    sessions: sessions.map((s) => ({
      id: s.id,
      createdAt: iso(s.createdAt),
      deviceId: s.deviceId,
      providerType: s.providerType,
    })),
    apiKeys: apiKeys.map((k) => ({ _id: k.id, name: k.name, disabled: k.disabled })),
  };
}

/** An e-mail/password registration that has no user object yet. */
export function registrationView(account: StoredUserpassAccount): User {
  return {
    id: account.id,
    status: account.confirmed ? "confirmed" : "pending",
    type: "normal",
    email: account.email,
    disabled: false,
    createdAt: iso(account.createdAt),
    identities: [],
    sessions: [],
    apiKeys: [],
  };
}

/**
 * The newest `limit` user objects and registrations not tied to one, oldest first (a user before a
 * registration of the same moment, then by id), and how many there are: `listUsers`; with `email`,
 * of those whose e-mail matches. The page's sessions, keys and e-mails are read together, not user
 * by user.
 */
export async function newestUserViews(
  app: AppRuntime,
  limit: number,
  email?: EmailSearch,
): Promise<{ users: User[]; total: number }> {
  const { users, registrations, total } = await app.users.newest(limit, email);
  type Entry = { at: number; id: string; user?: StoredUser; account?: StoredUserpassAccount };
  const entries: Entry[] = [
    ...users.map((user) => ({ at: user.createdAt, id: user.id, user })),
    ...registrations.map((account) => ({ at: account.createdAt, id: account.id, account })),
  ];
  const oldestFirst = (a: Entry, b: Entry) =>
    a.at - b.at ||
    Number(a.user === undefined) - Number(b.user === undefined) ||
    (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  const page = entries.sort(oldestFirst).slice(-limit);
  // Past its lifetime a user is gone, whether or not a sweep removed it yet.
  const now = app.clock.now();
  const shown = page.filter((entry) => !entry.user || !userLifetimeEnded(entry.user, now));
  const pageUsers = shown.flatMap((entry) => (entry.user ? [entry.user] : []));
  const ids = pageUsers.map((user) => user.id);
  const userpassIds = pageUsers.flatMap((user) =>
    user.identities.filter((i) => i.provider_type === "local-userpass").map((i) => i.id),
  );
  const [sessions, apiKeys, accounts] = await Promise.all([
    app.sessions.forUsers(ids),
    app.apiKeys.forUsers(ids),
    app.users.accountsByIds(userpassIds),
  ]);
  const emails = new Map(accounts.map((account) => [account.id, account.email]));
  const byUser = <T extends { userId: string }>(records: T[]) => {
    const grouped = new Map<string, T[]>();
    for (const record of records) {
      const list = grouped.get(record.userId);
      if (list) list.push(record);
      else grouped.set(record.userId, [record]);
    }
    return grouped;
  };
  const sessionsOf = byUser(sessions);
  const keysOf = byUser(apiKeys);
  const emailOf = (user: StoredUser) => {
    const identity = user.identities.find((i) => i.provider_type === "local-userpass");
    return identity ? emails.get(identity.id) : undefined;
  };
  return {
    users: shown.map((entry) =>
      entry.user
        ? userViewOf(entry.user, emailOf(entry.user), sessionsOf.get(entry.id) ?? [], keysOf.get(entry.id) ?? [])
        : registrationView(entry.account!),
    ),
    total,
  };
}

/** The app's settings without secrets. */
export function redactedConfig(config: AppConfig): AppConfig {
  const copy = structuredClone(config);
  const customToken = copy.providers?.["custom-token"];
  if (customToken?.signingKey) customToken.signingKey = "[redacted]";
  if (customToken?.signingKeys) customToken.signingKeys = customToken.signingKeys.map(() => "[redacted]");
  // An endpoint's secret, as a signing key, lets whoever reads it in.
  for (const endpoint of copy.endpoints ?? []) if (endpoint.secret) endpoint.secret = "[redacted]";
  if (copy.dataApi?.secret) copy.dataApi.secret = "[redacted]";
  return copy;
}

export async function appSummary(emulator: Emulator, app: AppRuntime): Promise<ControlSchemas["AppSummary"]> {
  const [counts, mail] = await Promise.all([app.store.counts(), emulator.store.mail.count({ appId: app.appId })]);
  return {
    appId: app.appId,
    createdAt: iso(app.createdAt),
    users: counts.users,
    pendingUsers: counts.pendingUsers,
    mail,
  };
}

export async function appDetails(emulator: Emulator, app: AppRuntime): Promise<ControlSchemas["AppDetails"]> {
  return {
    ...(await appSummary(emulator, app)),
    domainId: app.domainId,
    watchers: app.watchers,
    clock: clockView(app.clock),
    functions: app.functions.names(),
    suspendedTriggers: suspensionViews(await emulator.apps.suspendedTriggers(app)),
    config: redactedConfig(app.config),
  };
}
