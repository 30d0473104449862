/** How the control API shows the emulator's records (the control document's User, AppDetails…). */
import type { ControlSchemas } from "../openapi/types.ts";
import type { AppRuntime } from "../runtime/app-runtime.ts";
import type { Emulator } from "../runtime/emulator.ts";
import { clockView } from "../state/clock.ts";
import { suspensionViews } from "../store/state-import.ts";
import { type StoredUser, type StoredUserpassAccount, userLifetimeEnded } from "../store/store.ts";
import { iso } from "./route.ts";

type User = ControlSchemas["User"];
type AppConfig = ControlSchemas["AppConfig"];

export async function userView(app: AppRuntime, user: StoredUser): Promise<User> {
  const [ownEmail, sessions, apiKeys] = await Promise.all([
    app.users.emailOf(user),
    app.sessions.forUser(user.id),
    app.apiKeys.forUser(user.id),
  ]);
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

export async function allUserViews(app: AppRuntime): Promise<User[]> {
  const views: { at: number; view: User }[] = [];
  const now = app.clock.now();
  for (const user of await app.users.list()) {
    // Past its lifetime it is gone, whether or not a sweep removed it yet.
    if (!userLifetimeEnded(user, now)) views.push({ at: user.createdAt, view: await userView(app, user) });
  }
  for (const account of await app.users.accounts()) {
    if (account.userId === null) views.push({ at: account.createdAt, view: registrationView(account) });
  }
  return views.sort((a, b) => a.at - b.at).map((v) => v.view);
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
