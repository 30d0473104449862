import { createAppServicesClient } from "@harness/openapi/app-services";
import { describe, expect, it } from "vitest";
import { deferred, empty, fakeFetch, type Handler, json, memoryStorage } from "../../test/fakes.ts";
import { refreshAccessToken } from "../api/refresh-access-token.ts";
import { AppServicesRequestError, expectOk } from "../errors/service-errors.ts";
import { createSessionMiddleware } from "./session-middleware.ts";
import { createSessionStore } from "./session-store.ts";
import { tokenKindOf } from "./token-kinds.ts";

const base = "http://services.test";
const profilePath = "/api/client/v2.0/auth/profile";
const sessionPath = "/api/client/v2.0/auth/session";
const profile = { user_id: "u1", domain_id: "d1", identities: [], data: {}, type: "normal" };
const expired = { error: "invalid session: access token expired", error_code: "InvalidSession", link: "x" };

function setup(handler: Handler) {
  const store = createSessionStore({ storage: memoryStorage(), key: "test:session" });
  store.signIn(
    { access_token: "access-1", refresh_token: "refresh-1", user_id: "u1", device_id: "000000000000000000000000" },
    { providerType: "local-userpass", email: "ada@example.com" },
  );
  const { fetch, calls } = fakeFetch(handler);
  const client = createAppServicesClient({ baseUrl: base, fetch });
  const middleware = createSessionMiddleware({
    store,
    tokenKindOf,
    refreshAccessToken: () => refreshAccessToken(client),
  });
  client.use(middleware);
  const getProfile = () => expectOk(client.GET(profilePath));
  const refreshes = () => calls.filter((c) => c.path === sessionPath && c.method === "POST").length;
  return { store, client, calls, getProfile, refreshes };
}

describe("session middleware: tokens per operation", () => {
  it("puts the access token, the refresh token or none, as the document says", async () => {
    const { client, calls } = setup((request) =>
      request.path.endsWith("/api_keys")
        ? json(200, [])
        : request.path.endsWith("/register")
          ? empty(201)
          : json(200, profile),
    );
    await expectOk(client.GET(profilePath));
    await expectOk(client.GET("/api/client/v2.0/auth/api_keys"));
    await expectOk(
      client.POST("/api/client/v2.0/app/{appId}/auth/providers/local-userpass/register", {
        params: { path: { appId: "a" } },
        body: { email: "ada@example.com", password: "secret1" },
      }),
    );
    expect(calls.map((c) => c.authorization)).toEqual(["Bearer access-1", "Bearer refresh-1", null]);
  });

  it("sends the access token on login only when linking", async () => {
    const reply = { access_token: "a", refresh_token: "r", user_id: "u1", device_id: "d" };
    const { client, calls } = setup(() => json(200, reply));
    const login = (link: boolean) =>
      expectOk(
        client.POST("/api/client/v2.0/app/{appId}/auth/providers/{provider}/login", {
          params: {
            path: { appId: "a", provider: "local-userpass" },
            ...(link ? { query: { link: "true" as const } } : {}),
          },
          body: { username: "ada@example.com", password: "secret1" },
        }),
      );
    await login(false);
    await login(true);
    expect(calls.map((c) => c.authorization)).toEqual([null, "Bearer access-1"]);
  });

  it("refreshes first when no access token is in memory (after a reload)", async () => {
    const { store, getProfile, calls } = setup((request) =>
      request.path === sessionPath ? json(201, { access_token: "access-2" }) : json(200, profile),
    );
    store.clearAccessToken();
    await getProfile();
    expect(calls.map((c) => `${c.method} ${c.path} ${c.authorization}`)).toEqual([
      `POST ${sessionPath} Bearer refresh-1`,
      `GET ${profilePath} Bearer access-2`,
    ]);
    expect(store.getAccessToken()).toBe("access-2");
  });
});

describe("session middleware: 401 InvalidSession", () => {
  it("refreshes once for concurrent requests and retries each of them once", async () => {
    const refreshReply = deferred<Response>();
    const refreshAsked = deferred<void>();
    const threeSent = deferred<void>();
    let firstTries = 0;
    const { getProfile, calls, refreshes, store } = setup((request) => {
      if (request.path === sessionPath) {
        refreshAsked.resolve();
        return refreshReply.promise;
      }
      if (request.authorization === "Bearer access-2") return json(200, profile);
      if (++firstTries === 3) threeSent.resolve();
      return json(401, expired);
    });
    const all = Promise.all([getProfile(), getProfile(), getProfile()]);
    // All three got their 401 and one refresh is out; only then does the refresh answer.
    await Promise.all([refreshAsked.promise, threeSent.promise]);
    refreshReply.resolve(json(201, { access_token: "access-2" }));
    await expect(all).resolves.toHaveLength(3);
    expect(refreshes()).toBe(1);
    expect(calls.filter((c) => c.path === profilePath).map((c) => c.authorization)).toEqual([
      "Bearer access-1",
      "Bearer access-1",
      "Bearer access-1",
      "Bearer access-2",
      "Bearer access-2",
      "Bearer access-2",
    ]);
    expect(store.getSnapshot()).toMatchObject({ status: "signed-in", accessToken: "access-2" });
  });

  it("also treats error: unauthorized as an invalid session", async () => {
    const { getProfile, refreshes } = setup((request) => {
      if (request.path === sessionPath) return json(201, { access_token: "access-2" });
      return request.authorization === "Bearer access-2" ? json(200, profile) : json(401, { error: "unauthorized" });
    });
    await expect(getProfile()).resolves.toEqual(profile);
    expect(refreshes()).toBe(1);
  });

  it("retries only once: a second 401 goes back to the caller", async () => {
    const { getProfile, calls, refreshes, store } = setup((request) =>
      request.path === sessionPath ? json(201, { access_token: "access-2" }) : json(401, expired),
    );
    const error = await getProfile().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AppServicesRequestError);
    expect((error as AppServicesRequestError).code).toBe("InvalidSession");
    expect(calls.filter((c) => c.path === profilePath)).toHaveLength(2);
    expect(refreshes()).toBe(1);
    expect(store.getSnapshot().status).toBe("signed-in");
  });

  it("uses a token another request already refreshed instead of refreshing again", async () => {
    const { getProfile, refreshes } = setup((request) => {
      if (request.path === sessionPath) return json(201, { access_token: "access-2" });
      return request.authorization === "Bearer access-2" ? json(200, profile) : json(401, expired);
    });
    await getProfile();
    await getProfile();
    expect(refreshes()).toBe(1);
  });

  it("signs out cleanly when the refresh is refused, and hands the 401 to every waiting caller", async () => {
    const refused = { error: "invalid session: failed to find refresh token", error_code: "InvalidSession" };
    const { getProfile, calls, refreshes, store } = setup((request) =>
      request.path === sessionPath ? json(401, refused) : json(401, expired),
    );
    const results = await Promise.allSettled([getProfile(), getProfile()]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected"]);
    expect(refreshes()).toBe(1);
    expect(calls.filter((c) => c.path === profilePath)).toHaveLength(2);
    expect(store.getSnapshot()).toEqual({ status: "signed-out", reason: "expired" });
    expect(store.getRefreshToken()).toBeNull();
  });

  it("keeps the session when the refresh cannot reach the service", async () => {
    const { getProfile, store } = setup((request) => {
      if (request.path === sessionPath) throw new TypeError("Failed to fetch");
      return json(401, expired);
    });
    await expect(getProfile()).rejects.toBeInstanceOf(TypeError);
    expect(store.getSnapshot().status).toBe("signed-in");
  });

  it("signs out on an InvalidSession 401 of a refresh-token call", async () => {
    const { client, store, refreshes } = setup(() =>
      json(401, { error: "signature is invalid", error_code: "InvalidSession" }),
    );
    await expect(expectOk(client.GET("/api/client/v2.0/auth/api_keys"))).rejects.toBeInstanceOf(
      AppServicesRequestError,
    );
    expect(refreshes()).toBe(0);
    expect(store.getSnapshot()).toEqual({ status: "signed-out", reason: "expired" });
  });

  it("leaves other 401s alone (wrong credentials while linking)", async () => {
    const { client, refreshes, store } = setup(() =>
      json(401, { error: "unauthorized", error_code: "InvalidPassword" }),
    );
    const linking = client.POST("/api/client/v2.0/app/{appId}/auth/providers/{provider}/login", {
      params: { path: { appId: "a", provider: "local-userpass" }, query: { link: "true" } },
      body: { username: "ada@example.com", password: "wrong-password" },
    });
    await expect(expectOk(linking)).rejects.toMatchObject({ status: 401, code: "InvalidPassword" });
    expect(refreshes()).toBe(0);
    expect(store.getSnapshot().status).toBe("signed-in");
  });

  it("retries the request with its body intact", async () => {
    const { client, calls } = setup((request) => {
      if (request.path === sessionPath) return json(201, { access_token: "access-2" });
      return request.authorization === "Bearer access-2" ? json(200, { $numberInt: "3" }) : json(401, expired);
    });
    const body = { name: "sum", arguments: [{ $numberInt: "1" }, { $numberInt: "2" }] };
    await expectOk(
      client.POST("/api/client/v2.0/app/{appId}/functions/call", { params: { path: { appId: "a" } }, body }),
    );
    const sent = calls.filter((c) => c.path.endsWith("/functions/call")).map((c) => JSON.parse(c.body));
    expect(sent).toEqual([body, body]);
  });
});
