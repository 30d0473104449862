import { describe, expect, it } from "vitest";
import { memoryStorage } from "../../test/fakes.ts";
import { createSessionStore } from "./session-store.ts";

const reply = {
  access_token: "access-1",
  refresh_token: "refresh-1",
  user_id: "u1",
  device_id: "65a1b2c3d4e5f60718293a4b",
};

function storageEvent(storage: Storage, key: string) {
  const event = new Event("storage") as StorageEvent;
  Object.defineProperties(event, { key: { value: key }, storageArea: { value: storage } });
  return event;
}

/** An unsigned JWT with this payload (the store only reads tokens). */
const token = (payload: object) =>
  `e30.${btoa(JSON.stringify(payload)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")}.sig`;

describe("session store", () => {
  it("keeps the display name of the latest access token's custom data, also after a reload", () => {
    const storage = memoryStorage();
    const store = createSessionStore({ storage, key: "k" });
    store.signIn(
      { ...reply, access_token: token({ user_data: { display_name: "Ada Lovelace" } }) },
      { providerType: "local-userpass", email: "ada@example.com" },
    );
    expect(store.getSnapshot()).toMatchObject({ displayName: "Ada Lovelace" });
    expect(createSessionStore({ storage, key: "k" }).getSnapshot()).toMatchObject({ displayName: "Ada Lovelace" });

    store.setAccessToken(token({ user_data: { display_name: "Ada King" } }));
    expect(store.getSnapshot()).toMatchObject({ displayName: "Ada King" });
    store.setAccessToken(token({ user_data: {} }));
    expect(store.getSnapshot()).toMatchObject({ displayName: null });
    expect(createSessionStore({ storage, key: "k" }).getSnapshot()).toMatchObject({ displayName: null });
  });

  it("persists the refresh token but keeps the access token in memory", () => {
    const storage = memoryStorage();
    const store = createSessionStore({ storage, key: "k" });
    store.signIn(reply, { providerType: "local-userpass", email: "ada@example.com" });
    expect(store.getAccessToken()).toBe("access-1");
    const persisted = storage.getItem("k") ?? "";
    expect(persisted).toContain("refresh-1");
    expect(persisted).not.toContain("access-1");
    expect(store.getDeviceId()).toBe(reply.device_id);

    // A reload: the session is back, without an access token.
    const reloaded = createSessionStore({ storage, key: "k" });
    expect(reloaded.getSnapshot()).toMatchObject({ status: "signed-in", userId: "u1", accessToken: null });
    expect(reloaded.getRefreshToken()).toBe("refresh-1");
  });

  it("signs out with a reason and forgets the tokens", () => {
    const storage = memoryStorage();
    const store = createSessionStore({ storage, key: "k" });
    store.signIn(reply, { providerType: "anon-user" });
    expect(store.getSnapshot()).toMatchObject({ anonymous: true });
    store.signOut("signed-out");
    expect(store.getSnapshot()).toEqual({ status: "signed-out", reason: "signed-out" });
    expect(storage.getItem("k")).toBeNull();
    expect(store.getAccessToken()).toBeNull();
  });

  it("follows other tabs through storage events", () => {
    const storage = memoryStorage();
    const events = new EventTarget();
    const tab = createSessionStore({ storage, key: "k", events: events as unknown as Window });
    const other = createSessionStore({ storage, key: "k" });
    let renders = 0;
    tab.subscribe(() => renders++);

    other.signIn(reply, { providerType: "local-userpass", email: "ada@example.com" });
    events.dispatchEvent(storageEvent(storage, "k"));
    expect(tab.getSnapshot()).toMatchObject({
      status: "signed-in",
      userId: "u1",
      email: "ada@example.com",
      accessToken: null,
    });

    tab.setAccessToken("access-tab");
    other.updateUser({ anonymous: false, email: "new@example.com" });
    events.dispatchEvent(storageEvent(storage, "k"));
    // Same session: this tab keeps its own access token.
    expect(tab.getSnapshot()).toMatchObject({ email: "new@example.com", accessToken: "access-tab" });

    other.signOut("signed-out");
    events.dispatchEvent(storageEvent(storage, "k"));
    expect(tab.getSnapshot()).toEqual({ status: "signed-out", reason: "other-tab" });
    expect(renders).toBe(4);
  });

  it("ignores storage events of other keys and other storage areas", () => {
    const storage = memoryStorage();
    const events = new EventTarget();
    const tab = createSessionStore({ storage, key: "k", events: events as unknown as Window });
    tab.signIn(reply, { providerType: "local-userpass" });
    storage.removeItem("k");
    events.dispatchEvent(storageEvent(storage, "other"));
    events.dispatchEvent(storageEvent(memoryStorage(), "k"));
    expect(tab.getSnapshot().status).toBe("signed-in");
  });
});
