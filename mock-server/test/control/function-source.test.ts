/**
 * Function source is code that runs on the host, so the control API takes it (inline functions,
 * app folders it does not host yet) only with a control token or --allow-function-source, and
 * never in production mode; refused requests change nothing. App folders given at start keep
 * their functions.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { FastifyInstance, InjectOptions } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anonymousLogin, base, bearer, call, testApp } from "../helpers/app.ts";

const defaultAppDir = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "apps", "local-app");
const withFunction = { functions: { evil: { source: "exports = () => 'ran on the host';" } } };
let scratch: string;
/** A copy of the default app under another id: an app folder the emulators below were not started with. */
let otherFolder: string;

beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), "function-source-"));
  otherFolder = join(scratch, "other-app");
  cpSync(defaultAppDir, otherFolder, { recursive: true });
  const realmConfig = join(otherFolder, "realm_config.json");
  writeFileSync(realmConfig, JSON.stringify({ ...JSON.parse(readFileSync(realmConfig, "utf8")), app_id: "other-app" }));
});
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const control = (app: FastifyInstance, operationId: string, options: InjectOptions, token?: string) =>
  call(app, operationId, { ...options, headers: { ...options.headers, ...(token ? bearer(token) : {}) } });

const createApp = (app: FastifyInstance, payload: Record<string, unknown>, token?: string) =>
  control(app, "createApp", { method: "POST", url: "/_mock/v1/apps", payload }, token);
const applyConfig = (app: FastifyInstance, payload: Record<string, unknown>, token?: string) =>
  control(app, "applyConfig", { method: "POST", url: "/_mock/v1/config/apply", payload }, token);
const importState = (app: FastifyInstance, payload: Record<string, unknown>, token?: string) =>
  control(app, "importState", { method: "PUT", url: "/_mock/v1/state", payload }, token);
const exportState = async (app: FastifyInstance, token?: string) =>
  (await control(app, "exportState", { method: "GET", url: "/_mock/v1/state" }, token)).body as {
    apps: { appId: string; appDir: string | null; config: Record<string, unknown> }[];
  };
const appIds = async (app: FastifyInstance, token?: string) =>
  ((await control(app, "listApps", { method: "GET", url: "/_mock/v1/apps" }, token)).body.apps as { appId: string }[])
    .map((a) => a.appId)
    .sort();

async function callFunction(app: FastifyInstance, appId: string, name: string, args: unknown[] = []) {
  const { access_token } = await anonymousLogin(app, appId);
  return call(app, "callFunction", {
    method: "POST",
    url: `${base}/app/${appId}/functions/call`,
    headers: bearer(access_token),
    payload: { name, arguments: args },
  });
}

describe("function source through the control API, by default", () => {
  let app: FastifyInstance;
  beforeAll(async () => {
    app = await testApp({ appDirs: [otherFolder] });
  });
  afterAll(() => app.close());

  it("is refused in create-app, apply-config and state import, and nothing changes", async () => {
    const before = await appIds(app);
    const created = await createApp(app, { appId: "with-source", config: withFunction });
    expect(created.response.statusCode).toBe(403);
    expect(created.body).toEqual({
      code: "FunctionSourceNotAllowed",
      error: expect.stringMatching(
        /^function source through the control API is off \(function 'evil'\).*--allow-function-source/,
      ),
    });
    const applied = await applyConfig(app, {
      apps: [{ appId: "plain" }, { appId: "with-source", config: withFunction }],
    });
    expect(applied.response.statusCode).toBe(403);
    expect(applied.body.code).toBe("FunctionSourceNotAllowed");
    const state = await exportState(app);
    const imported = await importState(app, {
      ...state,
      apps: state.apps.map((a) =>
        a.appId === "local-app" ? { ...a, appId: "x", config: { ...a.config, ...withFunction } } : a,
      ),
    });
    expect(imported.response.statusCode).toBe(403);
    expect(imported.body.code).toBe("FunctionSourceNotAllowed");
    expect(await appIds(app)).toEqual(before);
  });

  it("refuses app folders it does not host, and takes those it does", async () => {
    const unknown = mkdtempSync(join(scratch, "unknown-"));
    cpSync(defaultAppDir, unknown, { recursive: true });
    const applied = await applyConfig(app, { apps: [{ appId: "from-unknown-folder", appDir: unknown }] });
    expect(applied.response.statusCode).toBe(403);
    expect(applied.body.error).toContain(`app folder '${unknown}'`);
    const state = await exportState(app);
    const imported = await importState(app, {
      ...state,
      apps: state.apps.map((a) => (a.appId === "local-app" ? { ...a, appDir: unknown } : a)),
    });
    expect(imported.response.statusCode).toBe(403);
    expect(await app.emulator.apps.get("from-unknown-folder")).toBeUndefined();

    const known = await applyConfig(app, {
      apps: [
        { appId: "from-default-folder", appDir: defaultAppDir },
        { appId: "from-start-folder", appDir: otherFolder },
      ],
    });
    expect(known.response.statusCode).toBe(201);
    expect((await callFunction(app, "from-start-folder", "sum", [1, 2])).body).toEqual({ $numberInt: "3" });
  });

  it("leaves everything without function source as it was: new apps, state round trips, folder functions", async () => {
    expect((await createApp(app, { config: { functions: {}, values: { a: 1 } } })).response.statusCode).toBe(201);
    const state = await exportState(app);
    expect((await importState(app, state)).response.statusCode).toBe(204);
    expect((await callFunction(app, "local-app", "sum", [2, 3])).body).toEqual({ $numberInt: "5" });
    expect((await callFunction(app, "other-app", "sum", [4, 5])).body).toEqual({ $numberInt: "9" });
    const settings = await call(app, "getEmulatorConfig", { method: "GET", url: "/_mock/v1/config" });
    expect(settings.body.functionSourceAccepted).toBe(false);
  });
});

describe("function source through the control API, allowed", () => {
  it("is taken with --allow-function-source", async () => {
    const app = await testApp({ allowFunctionSource: true });
    try {
      const created = await createApp(app, { config: withFunction });
      expect(created.response.statusCode).toBe(201);
      expect((await callFunction(app, created.body.appId, "evil")).body).toBe("ran on the host");
      const settings = await call(app, "getEmulatorConfig", { method: "GET", url: "/_mock/v1/config" });
      expect(settings.body.functionSourceAccepted).toBe(true);
      // An app folder that is not there is bad input (400), not a conflict; nothing is made.
      const missing = join(scratch, "no-such-folder");
      const refused = await applyConfig(app, { apps: [{ appId: "first" }, { appId: "foldered", appDir: missing }] });
      expect([refused.response.statusCode, refused.body.error]).toEqual([400, `App folder ${missing} does not exist`]);
      expect(await appIds(app)).not.toContain("first");
    } finally {
      await app.close();
    }
  });

  it("is taken from the holder of the control token", async () => {
    const token = "a-control-token-for-function-source";
    const app = await testApp({ controlToken: token });
    try {
      expect((await createApp(app, { config: withFunction })).response.statusCode).toBe(401);
      const created = await createApp(app, { config: withFunction }, token);
      expect(created.response.statusCode).toBe(201);
      expect((await callFunction(app, created.body.appId, "evil")).body).toBe("ran on the host");
      expect(
        (await applyConfig(app, { apps: [{ appId: "folder", appDir: otherFolder }] }, token)).response.statusCode,
      ).toBe(201);
    } finally {
      await app.close();
    }
  });
});

describe("function source through the control API, in production mode", () => {
  it("is refused even with the control token (and with the option), while the app folder's functions run", async () => {
    const token = "a-production-control-token";
    const app = await testApp({
      production: true,
      controlToken: token,
      allowFunctionSource: true,
      appDirs: [otherFolder],
      signingSecret: "a-test-signing-secret-of-32-chars",
    });
    try {
      const created = await createApp(app, { config: withFunction }, token);
      expect(created.response.statusCode).toBe(403);
      expect(created.body).toEqual({
        code: "FunctionSourceNotAllowed",
        error:
          "function source through the control API is refused in production mode (function 'evil'): put the function in the app folder given with --app",
      });
      expect(
        (await applyConfig(app, { apps: [{ appId: "a", config: withFunction }] }, token)).response.statusCode,
      ).toBe(403);
      const unknown = mkdtempSync(join(scratch, "unknown-"));
      expect((await applyConfig(app, { apps: [{ appId: "b", appDir: unknown }] }, token)).response.statusCode).toBe(
        403,
      );
      const state = await exportState(app, token);
      const imported = await importState(
        app,
        { ...state, apps: state.apps.map((a) => ({ ...a, config: { ...a.config, ...withFunction } })) },
        token,
      );
      expect(imported.response.statusCode).toBe(403);
      expect(await appIds(app, token)).toEqual(["other-app"]);
      expect((await createApp(app, { appId: "plain" }, token)).response.statusCode).toBe(201);
      expect((await callFunction(app, "other-app", "sum", [1, 1])).body).toEqual({ $numberInt: "2" });
      const settings = await control(app, "getEmulatorConfig", { method: "GET", url: "/_mock/v1/config" }, token);
      expect(settings.body.functionSourceAccepted).toBe(false);
    } finally {
      await app.close();
    }
  });
});
