/**
 * `--budgets` (config/budgets.ts): what one instance shares among all its clients, sized by its
 * operator — read as KEY=VALUE pairs, refused with a reason, and in effect on the instance.
 */
import { afterAll, describe, expect, it } from "vitest";
import { defaultBudgets, parseBudgets } from "../../src/config/budgets.ts";
import { maxRequestBodyBytes } from "../../src/runtime/large-requests.ts";
import { testApp } from "../helpers/app.ts";
import { ensureBuilt, killAll, startEmulatorProcess } from "../helpers/emulator-process.ts";

describe("parseBudgets", () => {
  it("reads sizes with binary units and a count, any of them", () => {
    expect(parseBudgets("bodies=128MiB, replies=1GiB,streams=2048KiB,connections=1024")).toEqual({
      bodies: 128 * 1024 ** 2,
      replies: 1024 ** 3,
      streams: 2 * 1024 ** 2,
      connections: 1024,
    });
    expect(parseBudgets("streams=33554432")).toEqual({ streams: 32 * 1024 ** 2 });
    expect(parseBudgets("replies=64mib")).toEqual({ replies: 64 * 1024 ** 2 });
  });

  it.each([
    ["", "'' is not KEY=VALUE"],
    ["bodies", "'bodies' is not KEY=VALUE"],
    ["memory=1GiB", "'memory' is not one of bodies, replies, streams, connections"],
    ["bodies=lots", "bodies: 'lots' is not a size (bytes, or with KiB, MiB or GiB)"],
    ["bodies=1.5MiB", "bodies: '1.5MiB' is not a size (bytes, or with KiB, MiB or GiB)"],
    ["bodies=1MiB", `bodies: at least ${maxRequestBodyBytes} bytes (18 MiB), so that the largest body is taken alone`],
    ["replies=1KiB", "replies: at least 1048576 bytes (1 MiB)"],
    ["connections=0", "connections: '0' is not a count from 1 to 1000000"],
    ["connections=2KiB", "connections: '2KiB' is not a count from 1 to 1000000"],
    ["bodies=64MiB,bodies=128MiB", "bodies is given twice"],
  ])("refuses %j: %s", (text, reason) => {
    expect(parseBudgets(text)).toBe(reason);
  });

  it("has the instance's defaults", () => {
    expect(defaultBudgets).toEqual({
      bodies: 64 * 1024 ** 2,
      replies: 256 * 1024 ** 2,
      streams: 256 * 1024 ** 2,
      connections: 256,
    });
  });
});

describe("an instance's budgets", () => {
  it("are the defaults, or what it was started with, and its metrics say which", async () => {
    const given = { bodies: 20 * 1024 ** 2, replies: 2 * 1024 ** 2, streams: 3 * 1024 ** 2, connections: 7 };
    for (const [budgets, expected] of [
      [undefined, defaultBudgets],
      [given, given],
    ] as const) {
      const app = await testApp({ ...(budgets ? { budgets } : {}), metricsToken: "metrics-token-0123456789" });
      try {
        expect(app.emulator.budgets).toEqual(expected);
        const metrics = await app.inject({
          url: "/_mock/v1/metrics",
          headers: { authorization: "Bearer metrics-token-0123456789" },
        });
        expect(metrics.body).toContain(`appservices_budget{budget="bodies"} ${expected.bodies}`);
        expect(metrics.body).toContain(`appservices_budget{budget="replies"} ${expected.replies}`);
        expect(metrics.body).toContain(`appservices_budget{budget="streams"} ${expected.streams}`);
        expect(metrics.body).toContain(`appservices_budget{budget="connections"} ${expected.connections}`);
      } finally {
        await app.close();
      }
    }
  });
});

describe("--budgets", () => {
  afterAll(() => killAll());

  it("sets the started server's budgets, from the flag or MOCK_BUDGETS", async () => {
    await ensureBuilt();
    const token = "metrics-token-0123456789";
    for (const [args, env] of [
      [["--budgets", "connections=7,replies=2MiB"], {}],
      [[], { MOCK_BUDGETS: "connections=7, replies=2MiB" }],
    ] as const) {
      const server = await startEmulatorProcess([...args, "--metrics-token", token], env);
      try {
        const metrics = await fetch(`${server.url}/_mock/v1/metrics`, {
          headers: { authorization: `Bearer ${token}` },
        });
        const text = await metrics.text();
        expect(text).toContain('appservices_budget{budget="connections"} 7');
        expect(text).toContain(`appservices_budget{budget="replies"} ${2 * 1024 ** 2}`);
        expect(text).toContain(`appservices_budget{budget="bodies"} ${defaultBudgets.bodies}`);
      } finally {
        await server.stop();
      }
    }
  });
});
