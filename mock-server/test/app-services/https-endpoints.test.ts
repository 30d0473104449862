/**
 * Custom HTTPS endpoints (decision 0035): `/app/<appId>/endpoint/<route>` runs the endpoint's
 * function with the request (headers, query, body as a Binary) and a response to fill, as the
 * system, one user, a script's user or the user of the request's credentials, after the endpoint's
 * secret or signature check; the reply is what the function set, its value (JSON or Extended
 * JSON) or 204.
 */
import { createHmac } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import type { InjectOptions } from "light-my-request";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bearer, call, emailUser, newApp, testApp } from "../helpers/app.ts";
import { hs256 } from "../helpers/jwt.ts";

let app: FastifyInstance;
let appId: string;
let user: Awaited<ReturnType<typeof emailUser>>;
const tokenKey = "a-signing-key-of-some-length";

const fn = (source: string, settings: Record<string, unknown> = {}) => ({ source, ...settings });
const functions = {
  echo: fn(
    `exports = (request, response) => ({
    headers: request.headers, query: request.query,
    body: request.body === undefined ? null : request.body.text(),
    method: context.request.httpMethod, route: context.request.webhookUrl,
    address: context.request.remoteIPAddress, who: context.user.type,
  });`,
    { runAsSystem: true },
  ),
  dated: fn(
    `exports = () => ({ when: new Date(Date.UTC(2023, 4, 5)), id: new BSON.ObjectId("639a521bbdec9b85ba94014b"), n: 5 });`,
    { runAsSystem: true },
  ),
  shaped: fn(
    `exports = (request, response) => {
    response.setStatusCode(201);
    response.setHeader("Content-Type", "application/json");
    response.addHeader("Cache-Control", "max-age=600");
    response.addHeader("Cache-Control", "min-fresh=60");
    response.setHeader("Content-Length", "3");
    response.setBody(JSON.stringify({ saved: true }));
    return "ignored";
  };`,
    { runAsSystem: true },
  ),
  binary: fn(`exports = (request, response) => { response.setBody(new BSON.Binary(new Uint8Array([1, 2, 255]))); };`, {
    runAsSystem: true,
  }),
  badHeader: fn(`exports = (request, response) => { response.setHeader("X-Bad", "a\\r\\nb"); };`, {
    runAsSystem: true,
  }),
  whoAmI: fn(`exports = () => ({ id: context.user.id, custom: context.user.custom_data });`),
  asOne: fn(`exports = () => context.user.id;`),
  byScript: fn(`exports = () => context.user.id || context.user.type;`),
  guarded: fn(`exports = () => "in";`, {
    runAsSystem: true,
    private: true,
    canEvaluate: { "%%request.httpMethod": "POST" },
  }),
};

beforeAll(async () => {
  app = await testApp({ allowFunctionSource: true });
  appId = await newApp(app, {
    providers: {
      "api-key": { enabled: true },
      "custom-token": { enabled: true, signingKey: tokenKey, audience: "endpoints" },
    },
    customUserData: { enabled: true, database: "app", collection: "custom", userIdField: "user_id" },
    functions,
    endpoints: [
      { route: "/echo", httpMethod: "*", functionName: "echo", respondResult: true },
      { route: "/echo", httpMethod: "DELETE", functionName: "dated", respondResult: true },
      { route: "/nested/deeper/echo", httpMethod: "POST", functionName: "echo", respondResult: true },
      { route: "/dated", httpMethod: "GET", functionName: "dated", respondResult: true },
      { route: "/dated-ejson", httpMethod: "GET", functionName: "dated", respondResult: true, returnType: "EJSON" },
      { route: "/silent", httpMethod: "GET", functionName: "shaped" },
      { route: "/shaped", httpMethod: "POST", functionName: "shaped", respondResult: true },
      { route: "/binary", httpMethod: "GET", functionName: "binary", respondResult: true },
      { route: "/bad-header", httpMethod: "GET", functionName: "badHeader", respondResult: true },
      { route: "/off", httpMethod: "GET", functionName: "echo", respondResult: true, disabled: true },
      { route: "/me", httpMethod: "GET", functionName: "whoAmI", respondResult: true },
      {
        route: "/me-custom",
        httpMethod: "GET",
        functionName: "whoAmI",
        respondResult: true,
        fetchCustomUserData: true,
      },
      { route: "/me-new", httpMethod: "GET", functionName: "whoAmI", respondResult: true, createUserOnAuth: true },
      {
        route: "/secret",
        httpMethod: "GET",
        functionName: "echo",
        respondResult: true,
        validationMethod: "SECRET_AS_QUERY_PARAM",
        secret: "Super5ecr3t",
      },
      {
        route: "/signed",
        httpMethod: "POST",
        functionName: "echo",
        respondResult: true,
        validationMethod: "VERIFY_PAYLOAD",
        secret: "Super5ecr3t",
      },
      { route: "/guarded", httpMethod: "*", functionName: "guarded", respondResult: true },
    ],
  });
  user = await emailUser(app, appId, "ada@example.com", "correct horse");
});
afterAll(() => app.close());

const operationIds: Record<string, string> = {
  GET: "callEndpointGet",
  POST: "callEndpointPost",
  PUT: "callEndpointPut",
  PATCH: "callEndpointPatch",
  DELETE: "callEndpointDelete",
};
/** A request to an endpoint, contract-checked. */
const endpoint = (method: string, route: string, options: Omit<InjectOptions, "method" | "url"> = {}) =>
  call(app, operationIds[method]!, { method: method as "GET", url: `/app/${appId}/endpoint${route}`, ...options });

describe("HTTPS endpoints: routes, the request and the value", () => {
  it("give the function the request's headers, first query values and body, and answer its value as JSON", async () => {
    const { response, body } = await endpoint("POST", "/echo?tag=a&tag=b&secret=hidden&n=1", {
      headers: { "content-type": "text/plain", "x-many": ["one", "two"] },
      payload: "Hello, body",
      remoteAddress: "203.0.113.4",
    });
    expect(response.statusCode).toBe(200);
    expect(response.headers["content-type"]).toBe("application/json");
    expect(body).toMatchObject({
      headers: { "Content-Type": ["text/plain"], "X-Many": ["one", "two"] },
      query: { tag: "a", n: "1" },
      body: "Hello, body",
      method: "POST",
      route: "/echo",
      address: "203.0.113.4",
      who: "system",
    });
    expect(body.query).not.toHaveProperty("secret");
    const none = await endpoint("GET", "/echo");
    expect(none.body).toMatchObject({ body: null, method: "GET" });
  });

  it("take a route's own method before its any-method endpoint, nested routes, and refuse the rest", async () => {
    expect((await endpoint("DELETE", "/echo")).body).toMatchObject({ n: 5 });
    expect((await endpoint("PUT", "/echo")).body).toMatchObject({ method: "PUT" });
    expect((await endpoint("POST", "/nested/deeper/echo", { payload: "x" })).body).toMatchObject({
      route: "/nested/deeper/echo",
    });
    const wrongMethod = await endpoint("GET", "/nested/deeper/echo");
    expect(wrongMethod.response.statusCode).toBe(405);
    expect(wrongMethod.response.headers.allow).toBe("POST");
    expect(wrongMethod.body).toMatchObject({ error_code: "MethodNotAllowed" });
    for (const route of ["/nowhere", "/off", "/nested"]) {
      const missing = await endpoint("GET", route);
      expect(missing.response.statusCode, route).toBe(404);
      expect(missing.body).toMatchObject({ error: `no endpoint at route '${route}'`, error_code: "EndpointNotFound" });
    }
  });

  it("answer JSON with plain values, Extended JSON by the endpoint's return type or the request's Accept", async () => {
    const json = await endpoint("GET", "/dated");
    expect(json.body).toEqual({ when: "2023-05-05T00:00:00.000Z", id: "639a521bbdec9b85ba94014b", n: 5 });
    const ejson = await endpoint("GET", "/dated", { headers: { accept: "application/ejson" } });
    expect(ejson.response.headers["content-type"]).toBe("application/ejson");
    expect(JSON.parse(ejson.response.body)).toEqual({
      when: { $date: { $numberLong: String(Date.UTC(2023, 4, 5)) } },
      id: { $oid: "639a521bbdec9b85ba94014b" },
      n: { $numberInt: "5" },
    });
    expect(JSON.parse((await endpoint("GET", "/dated-ejson")).response.body).n).toEqual({ $numberInt: "5" });
    expect((await endpoint("GET", "/dated-ejson", { headers: { accept: "application/json" } })).body.n).toBe(5);
  });
});

describe("HTTPS endpoints: the response", () => {
  it("is what the function set: status, headers added and set, body; the server keeps its framing", async () => {
    const { response } = await endpoint("POST", "/shaped");
    expect(response.statusCode).toBe(201);
    expect(response.headers["content-type"]).toBe("application/json");
    // (addHeader: one header line a value.)
    expect(response.headers["cache-control"]).toEqual(["max-age=600", "min-fresh=60"]);
    expect(JSON.parse(response.body)).toEqual({ saved: true });
    expect(response.headers["content-length"]).toBe(String(Buffer.byteLength(response.body)));
    const binary = await endpoint("GET", "/binary");
    expect(binary.response.rawPayload).toEqual(Buffer.from([1, 2, 255]));
  });

  it("is 204 and empty without respond_result, whatever the function set", async () => {
    const { response } = await endpoint("GET", "/silent");
    expect(response.statusCode).toBe(204);
    expect(response.body).toBe("");
  });

  it("refuses a header that would break the reply, as the function's error", async () => {
    const { response, body } = await endpoint("GET", "/bad-header");
    expect(response.statusCode).toBe(400);
    expect(body).toMatchObject({ error_code: "FunctionExecutionError" });
    expect(body.error).toContain("a header value must be a string without line breaks");
  });
});

describe("HTTPS endpoints: who the function runs as", () => {
  it("needs credentials with application authentication, and takes an access token, an API key, e-mail and password", async () => {
    const none = await endpoint("GET", "/me");
    expect(none.response.statusCode).toBe(400);
    expect(none.body).toEqual({
      error: "no authentication methods were specified",
      error_code: "InvalidParameter",
      link: expect.any(String),
    });
    expect((await endpoint("GET", "/me", { headers: bearer(user.access_token) })).body.id).toBe(user.user_id);
    const key = await call(app, "createApiKey", {
      method: "POST",
      url: "/api/client/v2.0/auth/api_keys",
      headers: bearer(user.refresh_token),
      payload: { name: "endpoint-key" },
    });
    expect((await endpoint("GET", "/me", { headers: { apiKey: key.body.key } })).body.id).toBe(user.user_id);
    const byPassword = await endpoint("GET", "/me", {
      headers: { email: "ada@example.com", password: "correct horse" },
    });
    expect(byPassword.body.id).toBe(user.user_id);
    const wrong = await endpoint("GET", "/me", { headers: { email: "ada@example.com", password: "wrong horse" } });
    expect(wrong.response.statusCode).toBe(401);
    expect(wrong.body).toMatchObject({ error_code: "InvalidPassword" });
    const half = await endpoint("GET", "/me", { headers: { email: "ada@example.com" } });
    expect(half.response.statusCode).toBe(400);
    expect(half.body).toMatchObject({
      error:
        "must specify some form of authentication (either email+password, api-key, or jwt) in the request header or body",
      error_code: "MissingParameter",
    });
    const badToken = await endpoint("GET", "/me", { headers: bearer("not.a.token") });
    expect(badToken.response.statusCode).toBe(401);
  });

  it("creates the user of new credentials only with create_user_on_auth", async () => {
    const now = Math.floor(Date.now() / 1000);
    const jwt = hs256({ sub: "outside-7", aud: "endpoints", exp: now + 600 }, tokenKey);
    const refused = await endpoint("GET", "/me", { headers: { jwtTokenString: jwt } });
    expect(refused.response.statusCode).toBe(401);
    expect(refused.body).toMatchObject({
      error: "invalid session: error finding user for endpoint",
      error_code: "InvalidSession",
    });
    const created = await endpoint("GET", "/me-new", { headers: { jwtTokenString: jwt } });
    expect(created.response.statusCode).toBe(200);
    expect((await endpoint("GET", "/me", { headers: { jwtTokenString: jwt } })).body.id).toBe(created.body.id);
  });

  it("gives context.user.custom_data only with fetch_custom_user_data", async () => {
    await call(app, "insertDocuments", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/data/app/custom`,
      payload: { documents: [{ user_id: user.user_id, plan: "gold" }] },
    });
    expect((await endpoint("GET", "/me", { headers: bearer(user.access_token) })).body.custom).toEqual({});
    const fetched = await endpoint("GET", "/me-custom", { headers: bearer(user.access_token) });
    expect(fetched.body.custom).toMatchObject({ plan: "gold" });
  });

  it("runs as the function's run_as_user_id, or as the user its script answers", async () => {
    const other = await newApp(app, {
      functions: {
        asOne: fn(functions.asOne.source, { runAsUserId: user.user_id }),
        byScript: fn(functions.byScript.source, {
          runAsUserIdScriptSource: `exports = () => context.request.requestHeaders["X-As"] ? context.request.requestHeaders["X-As"][0] : { runAsSystem: true };`,
        }),
      },
      endpoints: [
        { route: "/one", httpMethod: "GET", functionName: "asOne", respondResult: true },
        { route: "/script", httpMethod: "GET", functionName: "byScript", respondResult: true },
      ],
    });
    const get = (route: string, headers = {}) =>
      call(app, "callEndpointGet", { method: "GET", url: `/app/${other}/endpoint${route}`, headers });
    // (The user of another app does not exist in this one.)
    expect((await get("/one")).body).toMatchObject({ error_code: "InvalidSession" });
    const mine = await emailUser(app, other, "bo@example.com", "pass-word-1");
    expect((await get("/script", { "x-as": mine.user_id })).body).toBe(mine.user_id);
    expect((await get("/script")).body).toBe("system");
  });
});

describe("HTTPS endpoints: the endpoint's own check", () => {
  it("wants the secret as the `secret` query parameter, which the function does not see", async () => {
    expect((await endpoint("GET", "/secret?secret=Super5ecr3t&x=1")).body).toMatchObject({ query: { x: "1" } });
    for (const query of ["", "?secret=wrong", "?secret="]) {
      const refused = await endpoint("GET", `/secret${query}`);
      expect(refused.response.statusCode, query).toBe(400);
      expect(refused.body).toMatchObject({ error: "invalid secret", error_code: "InvalidParameter" });
    }
  });

  it("wants the body signed with the secret in Endpoint-Signature", async () => {
    const payload = JSON.stringify({ message: "Hello!" });
    const signature = `sha256=${createHmac("sha256", "Super5ecr3t").update(payload).digest("hex")}`;
    const signed = await endpoint("POST", "/signed", { payload, headers: { "endpoint-signature": signature } });
    expect(signed.body).toMatchObject({ body: payload });
    for (const headers of [{}, { "endpoint-signature": signature.replace(/.$/, "0") }]) {
      const refused = await endpoint("POST", "/signed", { payload: `${payload} `, headers });
      expect(refused.response.statusCode).toBe(400);
      expect(refused.body).toMatchObject({ error_code: "InvalidParameter" });
    }
  });

  it("applies the function's can_evaluate (over %%request), and serves a private function", async () => {
    expect((await endpoint("POST", "/guarded")).body).toBe("in");
    const refused = await endpoint("GET", "/guarded");
    expect(refused.body).toMatchObject({ error: 'rule not matched for function "guarded"' });
  });
});

describe("HTTPS endpoints of an exported app", () => {
  it("serve its https_endpoints with its functions' settings (nested names, run_as_user_id)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "endpoints-app-"));
    const write = (path: string, content: string) => {
      mkdirSync(join(dir, path, ".."), { recursive: true });
      writeFileSync(join(dir, path), content);
    };
    write("realm_config.json", JSON.stringify({ app_id: "endpoints-abcde" }));
    write(
      "functions/config.json",
      JSON.stringify([
        { name: "endpoint/hello", private: false, run_as_system: true },
        { name: "endpoint/whoami", private: true, run_as_user_id: "000000000000000000000000" },
      ]),
    );
    write(
      "functions/endpoint/hello.js",
      "exports = async (req) => ({ greeting: 'Hello, ' + JSON.parse(req.body.text()).name + '!' });",
    );
    write("functions/endpoint/whoami.js", "exports = () => context.user.id;");
    write(
      "https_endpoints/config.json",
      JSON.stringify([
        { route: "/hello", http_method: "POST", function_name: "endpoint/hello", respond_result: true },
        { route: "/whoami", http_method: "GET", function_name: "endpoint/whoami", respond_result: true },
      ]),
    );
    const exported = await testApp({ appDirs: [dir] });
    try {
      const hello = await call(exported, "callEndpointPost", {
        method: "POST",
        url: "/app/endpoints-abcde/endpoint/hello",
        payload: { name: "Casey" },
      });
      expect(hello.body).toEqual({ greeting: "Hello, Casey!" });
      // Its run_as_user_id names no user of this server (users do not come over): refused, not run as anyone.
      const whoami = await call(exported, "callEndpointGet", {
        method: "GET",
        url: "/app/endpoints-abcde/endpoint/whoami",
      });
      expect(whoami.response.statusCode).toBe(401);
    } finally {
      await exported.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
