/**
 * A proxy the server does not trust (`--trust-proxy`): its X-Forwarded-For is ignored, so every
 * client behind it has its address in the per-address limits. The server says so in its log, once
 * per proxy address, naming the option that fixes it.
 */
import { describe, expect, it } from "vitest";
import { testApp } from "../helpers/app.ts";
import { logLines } from "../helpers/log-lines.ts";

const profile = (address: string, headers: Record<string, string> = {}) => ({
  method: "GET" as const,
  url: "/api/client/v2.0/app/local-app/location",
  remoteAddress: address,
  headers,
});

describe("a proxy the server does not trust", () => {
  it("is named in one warning per proxy address, with the option that makes it trusted", async () => {
    const { logStream, lines } = logLines();
    const app = await testApp({ logLevel: "warn", logStream });
    try {
      await app.inject(profile("10.1.2.3", { "x-forwarded-for": "203.0.113.9" }));
      await app.inject(profile("10.1.2.3", { "x-forwarded-for": "203.0.113.10" }));
      await app.inject(profile("10.9.9.9", { forwarded: "for=203.0.113.11" }));
      await app.inject(profile("10.7.7.7"));
      const warnings = lines.filter((line) => line.msg?.includes("a proxy this server does not trust"));
      expect(warnings.map((line) => line.proxy)).toEqual(["10.1.2.3", "10.9.9.9"]);
      expect(warnings[0]!.msg).toContain("--trust-proxy 10.1.2.3");
      expect(warnings[0]!.level).toBe(40);
    } finally {
      await app.close();
    }
  });

  it("is not named when it is trusted, by address or by hop count", async () => {
    for (const trustProxy of [["10.1.2.0/24"], 1, true] as const) {
      const { logStream, lines } = logLines();
      const app = await testApp({ logLevel: "warn", logStream, trustProxy: trustProxy as never });
      try {
        await app.inject(profile("10.1.2.3", { "x-forwarded-for": "203.0.113.9" }));
        expect(lines.filter((line) => line.msg?.includes("does not trust"))).toEqual([]);
      } finally {
        await app.close();
      }
    }
  });
});
