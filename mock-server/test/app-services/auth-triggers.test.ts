/**
 * Authentication triggers: after a user is created, logs in or is deleted through one of a
 * trigger's providers, its function runs as system with `{operationType, providers, user, time}`,
 * off the request's path (a failing trigger changes nothing for the request).
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { AppStore } from "../../src/store/store.ts";
import {
  anonymousLogin,
  base,
  bearer,
  bothBefore,
  call,
  emailUser,
  getProfile,
  newApp,
  testApp,
} from "../helpers/app.ts";
import { logLines, triggerFailed } from "../helpers/log-lines.ts";

let app: FastifyInstance;
let appId: string;
const { logStream, lines: logged } = logLines();

// Each event is recorded as a document (the function runs as system: no rule is needed).
const record = `exports = async (event) => {
  await context.services.get("mongodb-atlas").db("audit").collection("events").insertOne({
    operationType: event.operationType,
    providers: event.providers,
    userId: event.user.id,
    identities: event.user.identities.map((i) => i.provider_type),
    email: event.user.data.email ?? null,
    isDate: event.time instanceof Date,
    caller: context.user.type,
  });
};`;

beforeAll(async () => {
  app = await testApp({ allowFunctionSource: true, logLevel: "warn", logStream });
  appId = await newApp(app, {
    functions: {
      record: { source: record, private: true },
      broken: { source: "exports = () => { throw new Error('no audit today'); };", private: true },
      recordOff: {
        source: "exports = () => context.services.get('mongodb-atlas').db('audit').collection('off').insertOne({});",
        private: true,
      },
    },
    triggers: [
      {
        type: "AUTHENTICATION",
        name: "created",
        functionName: "record",
        operationType: "CREATE",
        providers: ["local-userpass", "anon-user"],
      },
      {
        type: "AUTHENTICATION",
        name: "guest logins",
        functionName: "record",
        operationType: "LOGIN",
        providers: ["anon-user"],
      },
      {
        type: "AUTHENTICATION",
        name: "deleted",
        functionName: "record",
        operationType: "DELETE",
        providers: ["anon-user", "local-userpass"],
      },
      {
        type: "AUTHENTICATION",
        name: "failing",
        functionName: "broken",
        operationType: "LOGIN",
        providers: ["local-userpass"],
      },
      {
        type: "AUTHENTICATION",
        name: "member logins",
        functionName: "record",
        operationType: "LOGIN",
        providers: ["local-userpass"],
      },
      {
        type: "AUTHENTICATION",
        name: "off",
        functionName: "recordOff",
        operationType: "LOGIN",
        providers: ["local-userpass"],
        disabled: true,
      },
    ],
  });
});
afterAll(() => app.close());

type Recorded = { operationType: string; providers: string[]; userId: string; email: string | null };

async function recorded(userId: string): Promise<Recorded[]> {
  const { body } = await call(app, "listDocuments", {
    method: "GET",
    url: `/_mock/v1/apps/${appId}/data/audit/events?filter=${encodeURIComponent(JSON.stringify({ userId }))}`,
  });
  return (body.documents as Recorded[]).map(({ operationType, providers, userId, email }) => ({
    operationType,
    providers,
    userId,
    email,
  }));
}

/** The user's CREATE, LOGIN and DELETE triggers ran, each once (waiting for the last to be recorded). */
async function createdLoggedInDeletedOnce(userId: string): Promise<void> {
  await expect.poll(async () => (await recorded(userId)).length).toBe(3);
  expect((await recorded(userId)).map((event) => event.operationType).sort()).toEqual(["CREATE", "DELETE", "LOGIN"]);
}

const byOperation = (events: Recorded[]) => [...events].sort((a, b) => a.operationType.localeCompare(b.operationType));

/** The app's next two user deletions held until both have come (two requests past their checks). */
const bothBeforeDeleting = () =>
  bothBefore(Object.getPrototypeOf(app.emulator.store.apps.scope(appId)) as AppStore, "deleteUser");

describe("authentication triggers", () => {
  it("run on a guest's creation, login and deletion, with the event as the service gives it", async () => {
    const guest = await anonymousLogin(app, appId);
    await expect.poll(async () => (await recorded(guest.user_id)).length).toBe(2);
    expect(byOperation(await recorded(guest.user_id))).toEqual([
      { operationType: "CREATE", providers: ["anon-user"], userId: guest.user_id, email: null },
      { operationType: "LOGIN", providers: ["anon-user"], userId: guest.user_id, email: null },
    ]);
    const { body: all } = await call(app, "listDocuments", {
      method: "GET",
      url: `/_mock/v1/apps/${appId}/data/audit/events?filter=${encodeURIComponent(JSON.stringify({ userId: guest.user_id }))}`,
    });
    expect(all.documents[0]).toMatchObject({ identities: ["anon-user"], isDate: true, caller: "system" });

    const deleted = await app.inject({
      method: "DELETE",
      url: `${base}/auth/delete`,
      headers: bearer(guest.access_token),
    });
    expect(deleted.statusCode).toBe(204);
    await createdLoggedInDeletedOnce(guest.user_id);
  });

  it("run only for their providers and operation; a failing one leaves the login as it was", async () => {
    const ada = await emailUser(app, appId, "ada@example.com", "correct horse");
    await expect.poll(async () => (await recorded(ada.user_id)).length).toBe(2);
    const created = {
      operationType: "CREATE",
      providers: ["local-userpass"],
      userId: ada.user_id,
      email: "ada@example.com",
    };
    const login = { ...created, operationType: "LOGIN" };
    expect(byOperation(await recorded(ada.user_id))).toEqual([created, login]);
    // A second login: the failing trigger runs (and fails), the disabled one does not; the login is fine.
    const again = await app.inject({
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/local-userpass/login`,
      payload: { username: "ada@example.com", password: "correct horse" },
    });
    expect(again.statusCode).toBe(200);
    const profile = await app.inject({
      method: "GET",
      url: `${base}/auth/profile`,
      headers: bearer(again.json().access_token),
    });
    expect(profile.statusCode).toBe(200);
    await expect.poll(async () => (await recorded(ada.user_id)).length).toBe(3);
    await expect
      .poll(() => triggerFailed(logged, "authentication trigger failed", "failing", /no audit today/))
      .toBe(true);
    const { body: off } = await call(app, "listDocuments", {
      method: "GET",
      url: `/_mock/v1/apps/${appId}/data/audit/off`,
    });
    expect(off.documents).toEqual([]);
  });

  it("run once for a user two requests delete at once; the later answers as a deleted user's request", async () => {
    const guest = await anonymousLogin(app, appId);
    await expect.poll(async () => (await recorded(guest.user_id)).length).toBe(2);
    bothBeforeDeleting();
    const [first, second] = await Promise.all(
      [1, 2].map(() =>
        call(app, "deleteUser", { method: "DELETE", url: `${base}/auth/delete`, headers: bearer(guest.access_token) }),
      ),
    );
    vi.restoreAllMocks();
    const later = await getProfile(app, guest.access_token);
    const { link: _, ...refused } = later.body;
    expect([first!.response.statusCode, second!.response.statusCode].sort()).toEqual([204, 401]);
    const loser = first!.response.statusCode === 401 ? first! : second!;
    expect(loser.body).toEqual({ ...refused, link: expect.any(String) });
    await createdLoggedInDeletedOnce(guest.user_id);
  });

  it("run once for a user the control API removes twice at once; the later answers 404", async () => {
    const guest = await anonymousLogin(app, appId);
    await expect.poll(async () => (await recorded(guest.user_id)).length).toBe(2);
    bothBeforeDeleting();
    const removals = await Promise.all(
      [1, 2].map(() =>
        call(app, "removeUser", { method: "DELETE", url: `/_mock/v1/apps/${appId}/users/${guest.user_id}` }),
      ),
    );
    vi.restoreAllMocks();
    expect(removals.map(({ response }) => response.statusCode).sort()).toEqual([204, 404]);
    await createdLoggedInDeletedOnce(guest.user_id);
  });
});
