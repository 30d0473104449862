/**
 * Which browser pages may call the control API: pages of the emulator's own origin — the one the
 * page reached it at, or the `--public-url` one, compared as origins — and no other; with
 * `--allowed-hosts '*'` and no control token, only names surely the emulator's (a page on a name
 * rebound to this host sends no Origin on a GET).
 */
import { afterAll, describe, expect, it } from "vitest";
import { call, testApp } from "../helpers/app.ts";

type App = Awaited<ReturnType<typeof testApp>>;
const opened: App[] = [];
afterAll(async () => {
  await Promise.all(opened.map((app) => app.close()));
});
const emulator = async (options: Parameters<typeof testApp>[0]) => {
  const app = await testApp(options);
  opened.push(app);
  return app;
};

const listApps = (app: App, headers: Record<string, string>) =>
  call(app, "listApps", { method: "GET", url: "/_mock/v1/apps", headers });
const createApp = (app: App, headers: Record<string, string>) =>
  call(app, "createApp", { method: "POST", url: "/_mock/v1/apps", headers, payload: {} });

describe("the control API and browser pages", () => {
  it("takes calls from a page of the address it was reached at, with --public-url set to another", async () => {
    const app = await emulator({ publicUrl: "http://localhost:47313" });
    const created = await createApp(app, { host: "127.0.0.1:47313", origin: "http://127.0.0.1:47313" });
    expect(created.response.statusCode).toBe(201);
    // …and from a page of --public-url's origin, however the URL was written.
    const cased = await emulator({ publicUrl: "http://Localhost:47316/" });
    const fromPublic = await createApp(cased, { host: "127.0.0.1:47316", origin: "http://localhost:47316" });
    expect(fromPublic.response.statusCode).toBe(201);
  });

  it("refuses a page of any other origin with 403 ForbiddenOrigin, changing nothing", async () => {
    const app = await emulator({ publicUrl: "https://notes.example.com", controlToken: "T0ken-abc" });
    const token = { authorization: "Bearer T0ken-abc" };
    const before = (await listApps(app, { host: "127.0.0.1:4000", ...token })).body.apps.length;
    for (const origin of ["https://evil.example", "null", "http://127.0.0.1:4001", "https://notes.example.com.evil"]) {
      const { response, body } = await createApp(app, { host: "127.0.0.1:4000", origin, ...token });
      expect(response.statusCode, origin).toBe(403);
      expect(body, origin).toEqual({
        code: "ForbiddenOrigin",
        error: `the control API does not accept requests from the origin ${origin}: only from the emulator's own (the page's address, or --public-url)`,
      });
    }
    expect((await listApps(app, { host: "127.0.0.1:4000", ...token })).body.apps.length).toBe(before);
    // The emulator's own origins, with the token: reached through a tunnel, and the public one.
    for (const origin of ["http://127.0.0.1:4000", "https://notes.example.com:443"]) {
      const { response } = await createApp(app, { host: "127.0.0.1:4000", origin, ...token });
      expect(response.statusCode, origin).toBe(201);
    }
  });

  it("with any Host answered, answers other names only with a control token", async () => {
    const open = await emulator({ allowedHosts: ["*"] });
    const rebound = { host: "attacker.example:4000" };
    const refused = await call(open, "exportState", { method: "GET", url: "/_mock/v1/state", headers: rebound });
    expect(refused.response.statusCode).toBe(403);
    expect(refused.body).toEqual({
      code: "HostNotAllowed",
      error:
        "the control API answers the Host 'attacker.example' only with a control token: --allowed-hosts '*' answers any Host, so a page on a name resolved to this host could use it (start with --control-token)",
    });
    expect(refused.response.body).not.toContain("signingSecret");
    expect((await listApps(open, { host: "127.0.0.1:4000" })).response.statusCode).toBe(200);
    // (The services still answer any Host.)
    const location = await open.inject({
      method: "GET",
      url: "/api/client/v2.0/app/local-app/location",
      headers: rebound,
    });
    expect(location.statusCode).toBe(200);
    const guarded = await emulator({ allowedHosts: ["*"], controlToken: "T0ken-abc" });
    const withToken = await listApps(guarded, { ...rebound, authorization: "Bearer T0ken-abc" });
    expect(withToken.response.statusCode).toBe(200);
  });
});
