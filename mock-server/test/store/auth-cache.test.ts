/**
 * What an instance on PostgreSQL keeps of the users and sessions of access-token requests
 * (store/postgres/auth-cache.ts): it answers only while its notifications are current, forgets what
 * a change names, and never keeps what a read found when a change named it after the read began —
 * whichever arrives first, the read's answer or the change.
 */
import { describe, expect, it } from "vitest";
import { AuthCache } from "../../src/store/postgres/auth-cache.ts";
import type { StoredSession, StoredUser } from "../../src/store/store.ts";

const user = (id: string): StoredUser => ({
  id,
  type: "normal",
  disabled: false,
  createdAt: 0,
  identities: [],
  data: {},
});

const session = (id: string, userId: string, apiKeyId?: string): StoredSession => ({
  id,
  userId,
  deviceId: "000000000000000000000001",
  providerType: "local-userpass",
  identityId: "i",
  createdAt: 0,
  expiresAt: 1,
  ...(apiKeyId ? { apiKeyId } : {}),
});

function cache() {
  const state = { fresh: true };
  const auth = new AuthCache({ fresh: () => state.fresh });
  /** A read that found the user and its session, answered now. */
  const read = (appId: string, u: string, s: string, apiKeyId?: string) =>
    auth.keep(auth.ticket(), appId, user(u), session(s, u, apiKeyId));
  return { auth, state, read };
}

describe("the users and sessions an instance keeps", () => {
  it("answers what a read found, and only while its notifications are current", () => {
    const { auth, state, read } = cache();
    expect(auth.userSession("a", "u1", "s1")).toBeNull();
    read("a", "u1", "s1");
    expect(auth.userSession("a", "u1", "s1")).toMatchObject({ user: { id: "u1" }, session: { id: "s1" } });
    // Another user's session, another app: not answered.
    expect(auth.userSession("a", "u2", "s1")).toBeNull();
    expect(auth.userSession("b", "u1", "s1")).toBeNull();
    state.fresh = false;
    expect(auth.userSession("a", "u1", "s1")).toBeNull();
    state.fresh = true;
    expect(auth.userSession("a", "u1", "s1")).not.toBeNull();
  });

  it("forgets what each change names, and nothing else", () => {
    const { auth, read } = cache();
    read("a", "u1", "s1");
    read("a", "u1", "s2", "k1");
    read("a", "u1", "s3", "k2");
    read("a", "u2", "s4");
    read("b", "u1", "s1");
    auth.forgetSessions("a", "u1", "s1");
    expect(auth.userSession("a", "u1", "s1")).toBeNull();
    expect(auth.userSession("a", "u1", "s2")).not.toBeNull();
    auth.forgetSessions("a", "u1", undefined, "k1");
    expect(auth.userSession("a", "u1", "s2")).toBeNull();
    expect(auth.userSession("a", "u1", "s3")).not.toBeNull();
    read("a", "u1", "s5");
    auth.forgetSessions("a", "u1");
    expect(auth.userSession("a", "u1", "s3")).toBeNull();
    expect(auth.userSession("a", "u1", "s5")).toBeNull();
    expect(auth.userSession("a", "u2", "s4")).not.toBeNull();
    auth.forgetUser("a", "u2");
    expect(auth.userSession("a", "u2", "s4")).toBeNull();
    expect(auth.userSession("b", "u1", "s1")).not.toBeNull();
    read("b", "u2", "s6");
    auth.forgetApp("b");
    expect(auth.userSession("b", "u1", "s1")).toBeNull();
    expect(auth.userSession("b", "u2", "s6")).toBeNull();
    read("a", "u3", "s7");
    auth.clear();
    expect(auth.size).toEqual({ users: 0, sessions: 0, gone: 0 });
  });

  it("answers what a read found gone as gone, while current, unless its app was forgotten after the read began", () => {
    const { auth, state } = cache();
    /** A read that found the user without the session (`user` given), or no user. */
    const foundGone = (appId: string, u: string, s: string, found?: StoredUser) => {
      const ticket = auth.ticket();
      auth.foundGone(ticket, appId, found ? "session" : "user", found ? s : u);
      if (found) auth.keep(ticket, appId, found, undefined);
      else auth.drop(ticket);
    };
    expect(auth.goneAnswer("a", "u1", "s1")).toBeNull();
    foundGone("a", "u1", "s1", user("u1"));
    expect(auth.goneAnswer("a", "u1", "s1")).toEqual({ user: user("u1"), session: undefined });
    expect(auth.sessionGone("a", "s1")).toBe(true);
    expect(auth.goneAnswer("a", "u1", "s2")).toBeNull();
    expect(auth.goneAnswer("b", "u1", "s1")).toBeNull();
    foundGone("a", "u2", "s3");
    expect(auth.goneAnswer("a", "u2", "s3")).toEqual({ user: undefined, session: undefined });
    expect(auth.goneAnswer("a", "u2", "s9")).toEqual({ user: undefined, session: undefined });
    // The answer with the user needs the user as kept and current; the session's end stays known.
    auth.forgetUser("a", "u1");
    expect(auth.goneAnswer("a", "u1", "s1")).toBeNull();
    expect(auth.sessionGone("a", "s1")).toBe(true);
    state.fresh = false;
    expect(auth.goneAnswer("a", "u2", "s3")).toBeNull();
    state.fresh = true;
    // An app forgotten (reset, deleted, imported) while a read was on its way: nothing of it is kept.
    const ticket = auth.ticket();
    auth.forgetApp("a");
    expect(auth.sessionGone("a", "s1")).toBe(false);
    auth.foundGone(ticket, "a", "session", "s4");
    auth.drop(ticket);
    expect(auth.sessionGone("a", "s4")).toBe(false);
    foundGone("a", "u2", "s3");
    auth.clear();
    expect(auth.goneAnswer("a", "u2", "s3")).toBeNull();
  });

  it("does not keep what a read found when a change named it after the read began", () => {
    const changes: [string, (auth: AuthCache) => void][] = [
      ["its session ended", (auth) => auth.forgetSessions("a", "u1", "s1")],
      ["every session of its user ended", (auth) => auth.forgetSessions("a", "u1")],
      ["the sessions of its API key ended", (auth) => auth.forgetSessions("a", "u1", undefined, "k1")],
      ["its user changed", (auth) => auth.forgetUser("a", "u1")],
      ["its app was reset", (auth) => auth.forgetApp("a")],
      ["the notifications were interrupted", (auth) => auth.clear()],
    ];
    for (const [what, change] of changes) {
      const { auth } = cache();
      const ticket = auth.ticket();
      // The change arrives while the read is on its way (its answer predates the change).
      change(auth);
      auth.keep(ticket, "a", user("u1"), session("s1", "u1", "k1"));
      expect(auth.userSession("a", "u1", "s1"), what).toBeNull();
      // A read that began after the change keeps what it found.
      auth.keep(auth.ticket(), "a", user("u1"), session("s1", "u1", "k1"));
      expect(auth.userSession("a", "u1", "s1"), what).not.toBeNull();
    }
  });

  it("keeps a read's answer when the change it raced arrived first and was about something else", () => {
    const { auth } = cache();
    const ticket = auth.ticket();
    auth.forgetSessions("a", "u1", "s9");
    auth.forgetUser("a", "u2");
    auth.forgetSessions("b", "u1");
    auth.keep(ticket, "a", user("u1"), session("s1", "u1"));
    expect(auth.userSession("a", "u1", "s1")).not.toBeNull();
  });

  it("keeps its marks of changes bounded while reads stay in flight", () => {
    const { auth } = cache();
    const oldest = auth.ticket();
    for (let n = 0; n < 5000; n++) {
      const ticket = auth.ticket();
      auth.forgetUser("a", `u${n}`);
      auth.drop(ticket);
    }
    auth.drop(oldest);
    const marks = (auth as unknown as { invalidated: Map<string, number> }).invalidated;
    for (let n = 0; n < 3000; n++) {
      const ticket = auth.ticket();
      auth.forgetUser("a", `v${n}`);
      auth.forgetUser("a", `w${n}`);
      auth.drop(ticket);
    }
    expect(marks.size).toBeLessThanOrEqual(1025);
  });
});
