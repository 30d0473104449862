/**
 * App Services errors carry a `link` (the real one points at the app's logs): to the request in the
 * inspector where an inspector is served, none in production mode without a control token.
 */
import type { FastifyInstance } from "fastify";
import { describe, expect, it } from "vitest";
import { call, testApp } from "../helpers/app.ts";

const secret = "a-test-signing-secret-of-32-chars";

/** A wrong password's 401, on an app of its own. */
async function wrongPassword(app: FastifyInstance) {
  const runtime = await app.emulator.apps.create({ appId: "links" });
  return call(app, "login", {
    method: "POST",
    url: `/api/client/v2.0/app/${runtime.appId}/auth/providers/local-userpass/login`,
    payload: { username: "nobody@example.com", password: "not-the-password" },
  });
}

describe("the link of an error reply", () => {
  it("opens the request in the inspector in the harness", async () => {
    const app = await testApp();
    try {
      const { response, body } = await wrongPassword(app);
      expect(response.statusCode).toBe(401);
      expect(body.link).toBe(`http://localhost:80/_mock/#/apps/links/requests/${response.headers["x-request-id"]}`);
    } finally {
      await app.close();
    }
  });

  it("is left out in production mode, which serves no inspector", async () => {
    const app = await testApp({ production: true, signingSecret: secret });
    try {
      const { response, body } = await wrongPassword(app);
      expect(response.statusCode).toBe(401);
      expect(body.error_code).toBe("InvalidPassword");
      expect(body).not.toHaveProperty("link");
      expect(response.body).not.toContain("/_mock");
    } finally {
      await app.close();
    }
  });

  it("is kept in production mode with a control token, which serves the inspector", async () => {
    const app = await testApp({ production: true, signingSecret: secret, controlToken: "operator-token" });
    try {
      const { body } = await wrongPassword(app);
      expect(body.link).toMatch(/\/_mock\/#\/apps\/links\/requests\//);
    } finally {
      await app.close();
    }
  });
});
