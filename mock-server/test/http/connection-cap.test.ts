/**
 * One client address holds at most so many connections at once (the `connections` budget, 256 by
 * default): past that its new connections are closed as they come, before a byte is read, so one
 * client cannot take the descriptors and memory every client shares (a connection that sends its
 * request slowly may be held for minutes). A trusted proxy's address is not capped: behind it,
 * every client has that address, and the proxy caps its own.
 */
import { connect, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { addressKey } from "../../src/http/client-address.ts";
import { call } from "../helpers/app.ts";
import { listening } from "../helpers/listen.ts";
import { until } from "../helpers/until.ts";

const token = "metrics-token-for-the-tests";
const location = "/api/client/v2.0/app/local-app/location";
const opened: { close(): unknown }[] = [];
afterEach(async () => {
  for (const item of opened.splice(0)) await item.close();
});

/** A raw connection, with what it received and whether the server closed it. */
async function connection(url: string) {
  const { port } = new URL(url);
  const socket: Socket = connect(Number(port), "127.0.0.1");
  const state = { received: "", closed: false };
  socket.on("data", (chunk) => {
    state.received += chunk.toString();
  });
  socket.on("error", () => undefined);
  socket.on("close", () => {
    state.closed = true;
  });
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  opened.push({ close: () => socket.destroy() });
  return {
    socket,
    state,
    /** Sends a GET of the location on this connection and waits for its answer's status. */
    async get(): Promise<number> {
      const before = state.received.length;
      socket.write(`GET ${location} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
      const head = await until(() => {
        const text = state.received.slice(before);
        return /^HTTP\/1\.1 \d{3}/.test(text) ? text : state.closed ? "closed" : undefined;
      }, "an answer");
      return head === "closed" ? 0 : Number(head.slice(9, 12));
    },
  };
}

describe("connections per client address", () => {
  it("closes an address's connections past its cap, and takes new ones once others close", async () => {
    const { app, url } = await listening({ budgets: { connections: 3 }, metricsToken: token });
    opened.push(app);
    const held = [await connection(url), await connection(url), await connection(url)];
    const over = await connection(url);
    await until(() => over.state.closed, "the connection past the cap to be closed");
    expect(over.state.received).toBe("");
    // Those within the cap are served, on and on.
    for (const c of held) expect(await c.get()).toBe(200);
    expect(await held[0]!.get()).toBe(200);
    // One closes: a new connection has its place.
    held[0]!.socket.destroy();
    const next = await until(async () => {
      const candidate = await connection(url);
      return (await candidate.get()) === 200 ? candidate : undefined;
    }, "a new connection to be served");
    expect(next.state.closed).toBe(false);

    const { body } = await call(app, "getMetrics", {
      method: "GET",
      url: "/_mock/v1/metrics",
      headers: { authorization: `Bearer ${token}` },
    });
    const refused = (body as string).split("\n").find((l) => l.startsWith("appservices_connections_refused_total "));
    expect(Number(refused?.split(" ")[1])).toBeGreaterThanOrEqual(1);
  });

  it("does not cap a trusted proxy's address", async () => {
    const { app, url } = await listening({ budgets: { connections: 2 }, trustProxy: ["127.0.0.1"] });
    opened.push(app);
    const held = [];
    for (let i = 0; i < 5; i++) held.push(await connection(url));
    for (const c of held) expect(await c.get()).toBe(200);
  });

  it("caps every address when the proxies are not trusted", async () => {
    const { app, url } = await listening({ budgets: { connections: 2 }, trustProxy: ["10.0.0.0/8"] });
    opened.push(app);
    const held = [await connection(url), await connection(url)];
    const over = await connection(url);
    await until(() => over.state.closed, "the connection past the cap to be closed");
    for (const c of held) expect(await c.get()).toBe(200);
  });
});

describe("whose connections count together", () => {
  it.each([
    ["127.0.0.1", "127.0.0.1"],
    ["::ffff:192.0.2.7", "::ffff:192.0.2.7"],
    ["2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2::/64"],
    ["2001:db8:1:2::1", "2001:db8:1:2::/64"],
    ["2001:DB8:0001:0002:ffff::9", "2001:db8:1:2::/64"],
    ["2001:db8::1", "2001:db8:0:0::/64"],
    ["::1", "0:0:0:0::/64"],
    ["fe80::1%eth0", "fe80:0:0:0::/64"],
    ["64:ff9b::192.0.2.1", "64:ff9b:0:0::/64"],
  ])("%s → %s", (address, key) => {
    expect(addressKey(address)).toBe(key);
  });
});
