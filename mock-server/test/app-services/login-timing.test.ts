/**
 * A wrong password costs the same whether the address is registered, pending or unknown: the
 * password is checked against a stand-in hash when there is no registration, so the time of the
 * reply does not tell which addresses have accounts (the bodies are the same already). Measured
 * relative to each other at a hash cost where one check takes milliseconds, alternating, medians.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, expect, it } from "vitest";
import { base, call, newApp, testApp } from "../helpers/app.ts";

let app: FastifyInstance;
beforeAll(async () => {
  // Cost 13: about 15 ms a check here, far above a lookup's fraction of a millisecond.
  app = await testApp({ passwordHashCost: 13 });
});
afterAll(() => app.close());

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

it("answers a wrong password for a known, a pending and an unknown address after the same work", async () => {
  const appId = await newApp(app);
  for (const [email, confirmed] of [
    ["known@example.com", true],
    ["pending@example.com", false],
  ] as const) {
    await call(app, "createUser", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/users`,
      payload: { email, password: "the-right-one", confirmed },
    });
  }
  const attempt = async (username: string, password = "a-wrong-one") => {
    const started = performance.now();
    const { response, body } = await call(app, "login", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/local-userpass/login`,
      payload: { username, password },
    });
    const ms = performance.now() - started;
    expect([response.statusCode, body.error_code]).toEqual([401, "InvalidPassword"]);
    return ms;
  };
  // Warm up (the stand-in hash is made once, on first use).
  await attempt("nobody@example.com");
  const times = {
    known: [] as number[],
    pending: [] as number[],
    unknown: [] as number[],
    rightPending: [] as number[],
  };
  for (let i = 0; i < 7; i++) {
    times.known.push(await attempt("known@example.com"));
    times.unknown.push(await attempt(`nobody-${i}@example.com`));
    times.pending.push(await attempt("pending@example.com"));
    times.rightPending.push(await attempt("pending@example.com", "the-right-one"));
  }
  const known = median(times.known);
  for (const other of [times.unknown, times.pending, times.rightPending]) {
    expect(median(other)).toBeGreaterThan(known * 0.5);
  }
});
