/**
 * Liveness and readiness: `/_mock/v1/health` answers while the process runs, `/_mock/v1/ready`
 * only while the instance should get traffic — in every mode, without a token.
 */
import { describe, expect, it } from "vitest";
import { call, testApp } from "../helpers/app.ts";

describe("getReadiness", () => {
  it("answers ready once the emulator serves", async () => {
    const app = await testApp();
    try {
      const { response, body } = await call(app, "getReadiness", { method: "GET", url: "/_mock/v1/ready" });
      expect(response.statusCode).toBe(200);
      expect(body).toEqual({ status: "ready" });
    } finally {
      await app.close();
    }
  });

  it("is served in production mode without a control token, like the health check, and refuses foreign Hosts", async () => {
    const app = await testApp({ production: true, signingSecret: "a-test-signing-secret-of-32-chars" });
    try {
      expect((await call(app, "getReadiness", { method: "GET", url: "/_mock/v1/ready" })).body).toEqual({
        status: "ready",
      });
      expect((await call(app, "getHealth", { method: "GET", url: "/_mock/v1/health" })).response.statusCode).toBe(200);
      const foreign = await call(app, "getReadiness", {
        method: "GET",
        url: "/_mock/v1/ready",
        headers: { host: "evil.example" },
      });
      expect(foreign.response.statusCode).toBe(403);
    } finally {
      await app.close();
    }
  });

  it("answers 503 once the instance is stopping, while the health check still answers", async () => {
    const app = await testApp();
    try {
      app.emulator.markStopping();
      const { response, body } = await call(app, "getReadiness", { method: "GET", url: "/_mock/v1/ready" });
      expect(response.statusCode).toBe(503);
      expect(response.headers["retry-after"]).toBe("1");
      expect(body).toEqual({ status: "stopping", reason: "the server is shutting down" });
      expect((await call(app, "getHealth", { method: "GET", url: "/_mock/v1/health" })).response.statusCode).toBe(200);
    } finally {
      await app.close();
    }
  });
});
