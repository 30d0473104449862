import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isLoopback } from "../../src/config/options.ts";
import { checkAllowedHost, hostName, hostPolicy, isValidHost } from "../../src/http/host-check.ts";
import { base, call, testApp } from "../helpers/app.ts";

describe("the Host allow-list", () => {
  let app: Awaited<ReturnType<typeof testApp>>;
  beforeAll(async () => {
    app = await testApp({ allowedHosts: ["notes.example", ".corp.example"] });
  });
  afterAll(() => app.close());

  const foreign = { host: "evil.example:4000" };

  it("refuses a foreign Host on the control API, with a body naming the option (no state leaks)", async () => {
    const { response, body } = await call(app, "exportState", {
      method: "GET",
      url: "/_mock/v1/state",
      headers: foreign,
    });
    expect(response.statusCode).toBe(403);
    expect(body.code).toBe("HostNotAllowed");
    expect(body.error).toContain("--allowed-hosts evil.example");
    expect(response.body).not.toContain("signingSecret");
  });

  it("refuses a foreign Host on an App Services route, in the service's error shape without a link", async () => {
    const { response, body } = await call(app, "getLocation", {
      method: "GET",
      url: `${base}/app/local-app/location`,
      headers: foreign,
    });
    expect(response.statusCode).toBe(403);
    expect(body).toEqual({ error: expect.stringContaining("--allowed-hosts"), error_code: "HostNotAllowed" });
  });

  it("refuses a foreign Host on EmailJS and on the inspector", async () => {
    const { response } = await call(app, "sendEmail", {
      method: "POST",
      url: "/api/v1.0/email/send",
      headers: foreign,
      payload: { service_id: "s", template_id: "t", user_id: "u" },
    });
    expect(response.statusCode).toBe(403);
    expect(response.body).toContain("--allowed-hosts evil.example");
    const inspector = await app.inject({ method: "GET", url: "/_mock/", headers: foreign });
    expect(inspector.statusCode).toBe(403);
    expect(inspector.body).not.toContain("<html");
    const preflight = await app.inject({
      method: "OPTIONS",
      url: `${base}/app/local-app/location`,
      headers: { ...foreign, origin: "http://evil.example:4000", "access-control-request-method": "GET" },
    });
    expect(preflight.statusCode).toBe(403);
  });

  it("answers loopback names and addresses, listed hosts and their subdomains", async () => {
    for (const host of [
      "127.0.0.1:4000",
      "localhost",
      "LOCALHOST:4000",
      "app.localhost:5173",
      "[::1]:4000",
      "127.0.0.2",
      "notes.example",
      "corp.example:8443",
      "a.b.corp.example",
    ]) {
      const { response } = await call(app, "getHealth", { method: "GET", url: "/_mock/v1/health", headers: { host } });
      expect(response.statusCode, host).toBe(200);
    }
  });

  it("refuses names that only look like loopback or a listed host", async () => {
    for (const host of [
      "127.example.com",
      "localhost.evil.example",
      "notes.example.evil",
      "xcorp.example",
      "127.0.0.1.nip.io",
    ]) {
      const { response } = await call(app, "getHealth", { method: "GET", url: "/_mock/v1/health", headers: { host } });
      expect(response.statusCode, host).toBe(403);
    }
  });

  it("answers the host of --public-url and the address it listens on", () => {
    const policy = hostPolicy({ host: "10.0.0.5", publicUrl: "https://api.notes.example", allowedHosts: [] });
    expect(policy.allows("api.notes.example")).toBe(true);
    expect(policy.allows("api.notes.example:443")).toBe(true);
    expect(policy.allows("10.0.0.5:4000")).toBe(true);
    expect(policy.allows("10.0.0.6:4000")).toBe(false);
    expect(policy.allows(undefined)).toBe(false);
    const wildcardListener = hostPolicy({ host: "0.0.0.0", publicUrl: null, allowedHosts: [] });
    expect(wildcardListener.allows("0.0.0.0")).toBe(false);
  });

  it("refuses a Host that is not a host name or address with an optional numeric port, listed or not", async () => {
    const malformed = [
      "127.0.0.1:4000@evil.com",
      "127.0.0.1:evil",
      "localhost:4000/evil",
      "127.0.0.1:4000 evil.com",
      "127.0.0.1:",
      "127.0.0.1:99999",
      "127.0.0.1:4000:4000",
      "user@localhost",
      "[::1]x",
      "[::1]:4000@evil.com",
      "[not-ipv6]:4000",
      "localhost\\evil",
      "local host",
    ];
    for (const host of malformed) {
      const { response, body } = await call(app, "getLocation", {
        method: "GET",
        url: `${base}/app/local-app/location`,
        headers: { host },
      });
      expect(response.statusCode, host).toBe(403);
      expect(body.error_code, host).toBe("HostNotAllowed");
      // Nothing of the value comes back.
      expect(response.body, host).not.toContain(host);
    }
    const control = await call(app, "getHealth", {
      method: "GET",
      url: "/_mock/v1/health",
      headers: { host: "notes.example:4000@evil.com" },
    });
    expect(control.response.statusCode).toBe(403);
    expect(control.body.code).toBe("HostNotAllowed");
  });

  it("checks the Host's form even with '*', so location never echoes anything else", async () => {
    const open = await testApp({ allowedHosts: ["*"] });
    try {
      for (const host of ["127.0.0.1:4000@evil.com", "127.0.0.1:evil", "evil.example:4000/x"]) {
        const { response } = await call(open, "getLocation", {
          method: "GET",
          url: `${base}/app/local-app/location`,
          headers: { host },
        });
        expect(response.statusCode, host).toBe(403);
      }
      for (const host of ["evil.example:4000", "EVIL.example", "[::1]:4000", "10.0.0.1", "my_service:8080"]) {
        const { response, body } = await call(open, "getLocation", {
          method: "GET",
          url: `${base}/app/local-app/location`,
          headers: { host },
        });
        expect(response.statusCode, host).toBe(200);
        expect(body.hostname).toBe(`http://${host}`);
      }
    } finally {
      await open.close();
    }
  });

  it("'*' switches the check off", async () => {
    const open = await testApp({ allowedHosts: ["*"] });
    const { response } = await call(open, "getHealth", { method: "GET", url: "/_mock/v1/health", headers: foreign });
    expect(response.statusCode).toBe(200);
    await open.close();
  });
});

describe("host names", () => {
  it("takes the name out of a Host header", () => {
    expect(hostName("Example.COM:80")).toBe("example.com");
    expect(hostName("[::1]:4000")).toBe("::1");
    expect(hostName("localhost.")).toBe("localhost");
    expect(hostName("localhost.:4000")).toBe("localhost");
  });

  it("accepts only a whole host: a name or an address, then an optional numeric port", () => {
    for (const header of [
      "localhost",
      "LOCALHOST:4000",
      "a.b.example",
      "x.example.",
      "10.0.0.1:65535",
      "[::1]",
      "[::1]:80",
      "my_service:8080",
    ]) {
      expect(isValidHost(header), header).toBe(true);
    }
    for (const header of [
      "a@b",
      "a:b",
      "a:",
      ":80",
      "a:80:80",
      "a/b",
      "a b",
      "[::1",
      "::1",
      "[::1]:",
      "[1.2.3.4]",
      "a:123456",
      "a:70000",
      "-a",
      "a..b",
      "",
    ]) {
      expect(isValidHost(header), header).toBe(false);
    }
  });

  it("validates --allowed-hosts entries", () => {
    expect(checkAllowedHost("*")).toBeNull();
    expect(checkAllowedHost("notes.example")).toBeNull();
    expect(checkAllowedHost(".notes.example")).toBeNull();
    expect(checkAllowedHost("10.1.2.3")).toBeNull();
    expect(checkAllowedHost("::1")).toBeNull();
    expect(checkAllowedHost("http://notes.example")).toMatch(/not a host name/);
    expect(checkAllowedHost("bad host")).toMatch(/not a host name/);
    expect(checkAllowedHost("-x.example")).toMatch(/not a host name/);
  });

  it("takes only loopback addresses and localhost names as loopback", () => {
    for (const host of ["127.0.0.1", "127.255.0.9", "::1", "[::1]", "::ffff:127.0.0.1", "localhost", "a.localhost"]) {
      expect(isLoopback(host), host).toBe(true);
    }
    for (const host of ["127.example.com", "127.0.0.1.nip.io", "0.0.0.0", "10.0.0.1", "localhost.example", "::2"]) {
      expect(isLoopback(host), host).toBe(false);
    }
  });
});
