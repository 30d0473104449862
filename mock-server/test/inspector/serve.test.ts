/** The inspector's files at `/_mock/`: served from the build, a clear 503 when not built, nothing outside the build. */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Fastify, { type FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inspectorPlugin } from "../../src/inspector/plugin.ts";
import { testApp } from "../helpers/app.ts";

let dir: string;
let built: FastifyInstance;
let notBuilt: FastifyInstance;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "inspector-"));
  writeFileSync(join(dir, "index.html"), "<!doctype html><title>Emulator inspector</title>");
  writeFileSync(join(dir, "inspector.js"), "console.log(1)");
  writeFileSync(join(dir, "styles.css"), "body{}");
  writeFileSync(join(dir, ".secret"), "no");
  built = Fastify();
  await built.register(inspectorPlugin, { findDir: () => dir });
  notBuilt = Fastify();
  await notBuilt.register(inspectorPlugin, { findDir: () => null });
});

afterAll(async () => {
  await built.close();
  await notBuilt.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("the inspector's files", () => {
  it("redirects /_mock to /_mock/ and serves the page with a strict content security policy", async () => {
    const redirect = await built.inject({ url: "/_mock" });
    expect([redirect.statusCode, redirect.headers.location]).toEqual([301, "/_mock/"]);
    const page = await built.inject({ url: "/_mock/" });
    expect(page.statusCode).toBe(200);
    expect(page.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(page.body).toContain("Emulator inspector");
    const csp = String(page.headers["content-security-policy"]);
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
  });

  it("serves the bundle and the stylesheet with their types", async () => {
    const script = await built.inject({ url: "/_mock/inspector.js" });
    expect([script.statusCode, script.headers["content-type"]]).toEqual([200, "text/javascript; charset=utf-8"]);
    const style = await built.inject({ url: "/_mock/styles.css" });
    expect([style.statusCode, style.headers["content-type"]]).toEqual([200, "text/css; charset=utf-8"]);
  });

  it("serves nothing else: unknown names, dot files, other directories", async () => {
    for (const url of [
      "/_mock/missing.js",
      "/_mock/.secret",
      "/_mock/..%2fpackage.json",
      "/_mock/%2e%2e/%2e%2e/package.json",
      "/_mock/sub/inspector.js",
    ]) {
      expect((await built.inject({ url })).statusCode, url).toBe(404);
    }
  });

  it("answers 503 with how to build it when the inspector is not built, without crashing", async () => {
    for (const url of ["/_mock/", "/_mock/inspector.js"]) {
      const response = await notBuilt.inject({ url });
      expect(response.statusCode).toBe(503);
      expect(response.headers["content-type"]).toBe("text/plain; charset=utf-8");
      expect(response.body).toContain("npm run build -w mock-server");
    }
  });

  it("leaves unknown control routes to the control API's 404", async () => {
    const app = await testApp();
    try {
      const response = await app.inject({ url: "/_mock/v1/no-such-route" });
      expect(response.statusCode).toBe(404);
      expect(response.json()).toEqual({ error: "no control route GET /_mock/v1/no-such-route", code: "NotFound" });
    } finally {
      await app.close();
    }
  });
});
