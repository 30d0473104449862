/**
 * Who is signed in. As the official SDK does, the refresh token is persisted (localStorage) and the
 * access token lives in memory only: a reload starts without one and the first call that needs it
 * refreshes it. Every tab keeps its own access token; the persisted record is shared, and a
 * `storage` event brings the other tabs along when one signs in, links, or signs out.
 */
import type { AppServicesComponents } from "@harness/openapi/app-services";
import { customUserData } from "./jwt.ts";

type LoginResponse = AppServicesComponents["schemas"]["LoginResponse"];

export type SignOutReason = "signed-out" | "expired" | "deleted" | "other-tab";

/** What is persisted (no access token). */
export interface SessionRecord {
  userId: string;
  refreshToken: string;
  /** The provider of the identity this session logged in with. */
  providerType: string;
  /** True while every identity of the user is anonymous. */
  anonymous: boolean;
  email: string | null;
  /**
   * The display name of the custom user data (`display_name`) in the latest access token; kept so
   * that a reload, which starts without an access token, still greets the user by name.
   */
  displayName: string | null;
}

export type Session =
  | { status: "signed-out"; reason: SignOutReason | null }
  | {
      status: "signed-in";
      userId: string;
      providerType: string;
      anonymous: boolean;
      email: string | null;
      displayName: string | null;
      accessToken: string | null;
    };

export interface SessionStore {
  getSnapshot(): Session;
  subscribe(listener: () => void): () => void;
  getAccessToken(): string | null;
  getRefreshToken(): string | null;
  /** The device id of an earlier login, sent along with the next one (as the SDK does). */
  getDeviceId(): string | null;
  signIn(reply: LoginResponse, details: { providerType: string; email?: string | null }): void;
  setAccessToken(token: string): void;
  /** Forgets the access token, so the next call that needs one refreshes it first. */
  clearAccessToken(): void;
  updateUser(details: { email?: string | null; anonymous?: boolean }): void;
  signOut(reason: SignOutReason): void;
  dispose(): void;
}

export interface SessionStoreOptions {
  storage: Storage | null;
  /** The storage key of the session record (scoped to the app id). */
  key: string;
  /** Where `storage` events arrive (the window); omitted in tests that need no other tabs. */
  events?: Pick<Window, "addEventListener" | "removeEventListener">;
}

const zeroDeviceId = "000000000000000000000000";

function readRecord(storage: Storage | null, key: string): SessionRecord | null {
  try {
    const raw = storage?.getItem(key);
    if (!raw) return null;
    const value = JSON.parse(raw) as Partial<SessionRecord>;
    if (typeof value.userId !== "string" || typeof value.refreshToken !== "string") return null;
    return {
      userId: value.userId,
      refreshToken: value.refreshToken,
      providerType: typeof value.providerType === "string" ? value.providerType : "unknown",
      anonymous: value.anonymous === true,
      email: typeof value.email === "string" ? value.email : null,
      displayName: typeof value.displayName === "string" ? value.displayName : null,
    };
  } catch {
    return null;
  }
}

/** The display name an access token carries, if any. */
function displayNameIn(accessToken: string): string | null {
  const value = customUserData(accessToken).display_name;
  return typeof value === "string" && value.trim() !== "" ? value : null;
}

function safely(action: () => void): void {
  try {
    action();
  } catch {
    // Storage full or disabled (private mode): the session still works in this tab.
  }
}

export function createSessionStore({ storage, key, events }: SessionStoreOptions): SessionStore {
  const deviceKey = `${key}:deviceId`;
  let record = readRecord(storage, key);
  let accessToken: string | null = null;
  let reason: SignOutReason | null = null;
  let snapshot: Session = build();
  const listeners = new Set<() => void>();

  function build(): Session {
    if (!record) return { status: "signed-out", reason };
    const { userId, providerType, anonymous, email, displayName } = record;
    return { status: "signed-in", userId, providerType, anonymous, email, displayName, accessToken };
  }

  function emit(): void {
    snapshot = build();
    for (const listener of [...listeners]) listener();
  }

  function persist(): void {
    safely(() => {
      if (record) storage?.setItem(key, JSON.stringify(record));
      else storage?.removeItem(key);
    });
  }

  function onStorage(event: StorageEvent): void {
    if (event.storageArea !== storage || (event.key !== key && event.key !== null)) return;
    const next = readRecord(storage, key);
    if (!next) {
      if (!record) return;
      record = null;
      accessToken = null;
      reason = "other-tab";
      emit();
      return;
    }
    if (!record || next.userId !== record.userId || next.refreshToken !== record.refreshToken) {
      // Another tab signed in (maybe as someone else): its access token stays there; ours refreshes.
      accessToken = null;
      reason = null;
    }
    record = next;
    emit();
  }
  events?.addEventListener("storage", onStorage as EventListener);

  return {
    getSnapshot: () => snapshot,
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    getAccessToken: () => (record ? accessToken : null),
    getRefreshToken: () => record?.refreshToken ?? null,
    getDeviceId() {
      try {
        return storage?.getItem(deviceKey) ?? null;
      } catch {
        return null;
      }
    },
    signIn(reply, details) {
      if (!reply.refresh_token) throw new Error("The login reply has no refresh token.");
      record = {
        userId: reply.user_id,
        refreshToken: reply.refresh_token,
        providerType: details.providerType,
        anonymous: details.providerType === "anon-user",
        email: details.email ?? null,
        displayName: displayNameIn(reply.access_token),
      };
      accessToken = reply.access_token;
      reason = null;
      persist();
      if (reply.device_id && reply.device_id !== zeroDeviceId)
        safely(() => storage?.setItem(deviceKey, reply.device_id));
      emit();
    },
    setAccessToken(token) {
      if (!record) return;
      accessToken = token;
      const displayName = displayNameIn(token);
      if (displayName !== record.displayName) {
        record = { ...record, displayName };
        persist();
      }
      emit();
    },
    clearAccessToken() {
      if (accessToken === null) return;
      accessToken = null;
      emit();
    },
    updateUser(details) {
      if (!record) return;
      record = {
        ...record,
        ...(details.email !== undefined ? { email: details.email } : {}),
        ...(details.anonymous !== undefined ? { anonymous: details.anonymous } : {}),
      };
      persist();
      emit();
    },
    signOut(why) {
      if (!record) return;
      record = null;
      accessToken = null;
      reason = why;
      persist();
      emit();
    },
    dispose() {
      events?.removeEventListener("storage", onStorage as EventListener);
      listeners.clear();
    },
  };
}
