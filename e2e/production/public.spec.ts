/**
 * What anyone on the network sees of the site: the web app (its client-side routes load directly,
 * over HTTP/2, with the security headers), the client API and the app's HTTPS endpoints, and
 * nothing else of the server — no control API, no inspector, no EmailJS API — and a foreign Host
 * refused.
 */
import { request as httpsRequest } from "node:https";
import { appId, clientApi, expect, site, test } from "./fixtures.ts";

test.describe("the public site", { tag: "@production" }, () => {
  test("serves the web app's routes over HTTP/2 with its security headers", async ({ page }) => {
    const response = await page.goto("/notes");
    expect(response?.status()).toBe(200);
    // Not signed in: the app itself sends the visitor to the sign-in page.
    await expect(page.getByRole("heading", { level: 1, name: "Sign in" })).toBeVisible();
    const headers = response!.headers();
    expect(headers["strict-transport-security"]).toMatch(/max-age=\d+/);
    expect(headers["x-content-type-options"]).toBe("nosniff");
    expect(headers["x-frame-options"]).toBe("DENY");
    expect(headers["referrer-policy"]).toBe("no-referrer");
    expect(headers["content-security-policy"]).toContain("default-src 'self'");
    expect(headers["cache-control"]).toBe("no-cache");
    expect(headers.server).toBe("nginx");
    const protocol = await page.evaluate(
      () => (performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming).nextHopProtocol,
    );
    expect(protocol).toBe("h2");
    // Its scripts name no source map: a browser fetches none (the maps hold the whole source).
    const scripts = await page
      .locator("script[src]")
      .evaluateAll((nodes) => nodes.map((node) => (node as HTMLScriptElement).src));
    expect(scripts.length).toBeGreaterThan(0);
    for (const src of scripts) {
      const text = await (await page.request.get(src)).text();
      expect(text.includes("sourceMappingURL"), src).toBe(false);
    }
  });

  test("answers the client API with the proxy's request id, and nothing else of the server", async ({ request }) => {
    const location = await request.get(`${clientApi}/location`);
    expect(location.status()).toBe(200);
    expect(await location.json()).toMatchObject({ hostname: site });
    // nginx's $request_id, taken by the instance from its trusted proxy and answered.
    expect(location.headers()["x-request-id"]).toMatch(/^[0-9a-f]{32}$/);
    expect(location.headers()["content-security-policy"]).toContain("default-src 'self'");

    for (const path of ["/_mock/v1/apps", "/_mock/", "/_mock/v1/health", "/_mock/v1/metrics", "/api/v1.0/email/send"]) {
      expect((await request.get(path)).status(), path).toBe(404);
    }
  });

  test("serves the app's HTTPS endpoint through the site, as the user of the access token", async ({ request }) => {
    const endpoint = `${site}/app/${appId}/endpoint/notes/stats`;
    const refused = await request.get(endpoint);
    expect(refused.status()).toBe(400);
    expect(await refused.json()).toMatchObject({ error: "no authentication methods were specified" });
    const login = await request.post(`${clientApi}/auth/providers/anon-user/login`, { data: {} });
    const { access_token: token } = (await login.json()) as { access_token: string };
    const stats = await request.get(endpoint, { headers: { authorization: `Bearer ${token}` } });
    expect(stats.status()).toBe(200);
    expect(stats.headers()["x-request-id"]).toMatch(/^[0-9a-f]{32}$/);
    expect(await stats.json()).toEqual({ count: 0, words: 0, lastUpdated: null });
  });

  test("refuses a foreign Host (DNS rebinding)", async () => {
    const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const url = new URL(`${clientApi}/location`);
      const req = httpsRequest(
        url,
        { headers: { host: "evil.example" }, servername: "localhost", rejectUnauthorized: false },
        (response) => {
          let text = "";
          response.setEncoding("utf8");
          response.on("data", (chunk: string) => (text += chunk));
          response.on("end", () => resolve({ status: response.statusCode ?? 0, body: text }));
        },
      );
      req.on("error", reject);
      req.end();
    });
    expect(status).toBe(403);
    expect(JSON.parse(body)).toMatchObject({ error_code: "HostNotAllowed" });
  });
});
