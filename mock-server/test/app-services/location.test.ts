import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { base, call, testApp } from "../helpers/app.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await testApp();
});
afterAll(() => app.close());

describe("getLocation", () => {
  it("answers the emulator's own origin as hostname and ws_hostname", async () => {
    const { response, body } = await call(app, "getLocation", {
      method: "GET",
      url: `${base}/app/local-app/location`,
      headers: { host: "127.0.0.1:4000" },
    });
    expect(response.statusCode).toBe(200);
    expect(body).toEqual({
      deployment_model: "GLOBAL",
      location: "US-VA",
      hostname: "http://127.0.0.1:4000",
      ws_hostname: "ws://127.0.0.1:4000",
    });
  });

  it("uses --public-url when one is set", async () => {
    const other = await testApp({ publicUrl: "https://emulator.test/" });
    const { body } = await call(other, "getLocation", { method: "GET", url: `${base}/app/local-app/location` });
    expect(body.hostname).toBe("https://emulator.test");
    expect(body.ws_hostname).toBe("wss://emulator.test");
    await other.close();
  });

  it("answers the service's error for an unknown app id (404, no error_code)", async () => {
    const { response, body } = await call(app, "getLocation", { method: "GET", url: `${base}/app/nope/location` });
    expect(response.statusCode).toBe(404);
    expect(body).toEqual({ error: "cannot find app using Client App ID 'nope'" });
  });
});
