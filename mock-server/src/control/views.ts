/** How the control API shows the emulator's records (the control document's User, AppDetails…). */
import type { ControlSchemas } from "../openapi/types.ts";
import type { AppRuntime } from "../state/app-runtime.ts";
import { clockView } from "../state/clock.ts";
import type { Emulator } from "../state/emulator.ts";
import type { StoredUser, StoredUserpassAccount } from "../state/users.ts";
import { iso } from "./route.ts";

type User = ControlSchemas["User"];
type AppConfig = ControlSchemas["AppConfig"];

export function userView(app: AppRuntime, user: StoredUser): User {
  const email = app.users.emailOf(user) ?? (typeof user.data.email === "string" ? user.data.email : undefined);
  return {
    id: user.id,
    status: "active",
    type: user.type,
    ...(email !== undefined ? { email } : {}),
    disabled: user.disabled,
    createdAt: iso(user.createdAt),
    ...(user.lastLoginAt !== undefined ? { lastLoginAt: iso(user.lastLoginAt) } : {}),
    identities: user.identities.map((i) => ({ id: i.id, provider_type: i.provider_type, provider_id: i.provider_id })),
    sessions: app.sessions.forUser(user.id).map((s) => ({
      id: s.id,
      createdAt: iso(s.createdAt),
      deviceId: s.deviceId,
      providerType: s.providerType,
    })),
    apiKeys: app.apiKeys.forUser(user.id).map((k) => ({ _id: k.id, name: k.name, disabled: k.disabled })),
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

export function allUserViews(app: AppRuntime): User[] {
  const views: { at: number; view: User }[] = [];
  for (const user of app.users.users_()) views.push({ at: user.createdAt, view: userView(app, user) });
  for (const account of app.users.accounts_()) {
    if (account.userId === null) views.push({ at: account.createdAt, view: registrationView(account) });
  }
  return views.sort((a, b) => a.at - b.at).map((v) => v.view);
}

/** The app's settings without secrets. */
export function redactedConfig(config: AppConfig): AppConfig {
  const copy = structuredClone(config);
  const customToken = copy.providers?.["custom-token"];
  if (customToken?.signingKey) customToken.signingKey = "[redacted]";
  return copy;
}

export function appSummary(emulator: Emulator, app: AppRuntime): ControlSchemas["AppSummary"] {
  return {
    appId: app.appId,
    createdAt: iso(app.createdAt),
    users: app.users.userCount,
    pendingUsers: app.users.pendingCount,
    mail: emulator.mail.count({ appId: app.appId }),
  };
}

export function appDetails(emulator: Emulator, app: AppRuntime): ControlSchemas["AppDetails"] {
  return {
    ...appSummary(emulator, app),
    domainId: app.domainId,
    watchers: app.watchers,
    clock: clockView(app.clock),
    functions: app.functions.names(),
    config: redactedConfig(app.config),
  };
}
