/** `GET /_mock/v1/events`: live events as server-sent events, all or one app's or one account's; released on disconnect. */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, newApp } from "../helpers/app.ts";
import { newAccount, sendEmail } from "../helpers/emailjs.ts";
import { expectTextContract } from "../helpers/fetch-contract.ts";
import { listening } from "../helpers/listen.ts";
import { until } from "../helpers/until.ts";

let app: FastifyInstance;
let url: string;
beforeAll(async () => {
  ({ app, url } = await listening());
});
afterAll(async () => {
  await app.close();
});

interface Stream {
  response: Response;
  /** Everything received so far. */
  text(): string;
  /** The events received so far. */
  events(): Record<string, unknown>[];
  close(): void;
}

async function open(query = ""): Promise<Stream> {
  const stop = new AbortController();
  const response = await fetch(`${url}/_mock/v1/events${query}`, { signal: stop.signal });
  let received = "";
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  void (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        received += value;
      }
    } catch {
      // aborted
    }
  })();
  return {
    response,
    text: () => received,
    events: () =>
      received
        .split("\n\n")
        .filter((block) => block.startsWith("data: "))
        .map((block) => JSON.parse(block.slice(6)) as Record<string, unknown>),
    close: () => stop.abort(),
  };
}

describe("streamEvents", () => {
  it("streams the events of one app as text/event-stream, and releases its subscription on disconnect", async () => {
    const { events } = app.emulator;
    const before = events.size;
    const appId = await newApp(app);
    const other = await newApp(app);
    const stream = await open(`?appId=${appId}`);
    await until(() => stream.text().startsWith(": connected"), "the stream to open");
    expect(events.size).toBe(before + 1);
    await call(app, "createUser", {
      method: "POST",
      url: `/_mock/v1/apps/${other}/users`,
      payload: { email: "x@example.com", password: "secret-1" },
    });
    await call(app, "createUser", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/users`,
      payload: { email: "ada@example.com", password: "secret-1" },
    });
    await call(app, "insertDocuments", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/data/db/notes`,
      payload: { documents: [{ title: "a" }] },
    });
    await call(app, "advanceClock", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/clock`,
      payload: { advanceBy: 5 },
    });
    await until(() => stream.events().some((e) => e.type === "clock"), "the clock event");
    const received = stream.events();
    expect(received.map((e) => [e.type, e.action])).toEqual([
      ["user", "created"],
      ["data", "insert"],
      ["clock", "advanced"],
    ]);
    for (const event of received) expect(event).toMatchObject({ appId, at: expect.any(String) });
    expectTextContract("streamEvents", stream.response, stream.text());
    expect(String(stream.response.headers.get("content-type"))).toMatch(/^text\/event-stream/);

    stream.close();
    await until(() => events.size === before, "the subscription to be released");
  });

  it("streams everything without a filter, and one EmailJS account's events with ?account=", async () => {
    const { publicKey } = await newAccount(app);
    const all = await open();
    const mine = await open(`?account=${publicKey}`);
    await until(() => all.text() !== "" && mine.text() !== "", "the streams to open");
    const appId = await newApp(app);
    await sendEmail(app, {
      user_id: publicKey,
      service_id: "local_service",
      template_id: "local_template",
      template_params: { to_email: "ann@example.com" },
    });
    await until(() => mine.events().some((e) => e.type === "request"), "the account's request event");
    expect(mine.events().map((e) => [e.type, e.action, e.account])).toEqual([
      ["mail", "captured", publicKey],
      ["request", "completed", publicKey],
    ]);
    await until(() => all.events().some((e) => e.type === "request"), "the request event on the full stream");
    expect(all.events().some((e) => e.type === "app" && e.appId === appId)).toBe(true);
    all.close();
    mine.close();
  });

  it("announces an EmailJS account made and deleted, and the mail deleted with it", async () => {
    const all = await open();
    await until(() => all.text() !== "", "the stream to open");
    const { publicKey } = await newAccount(app);
    const mine = await open(`?account=${publicKey}`);
    await until(() => mine.text() !== "", "the account's stream to open");
    await sendEmail(app, {
      user_id: publicKey,
      service_id: "local_service",
      template_id: "local_template",
      template_params: { to_email: "ann@example.com" },
    });
    const deleted = await call(app, "deleteEmailJsAccount", {
      method: "DELETE",
      url: `/_mock/v1/emailjs/accounts/${publicKey}`,
    });
    expect(deleted.response.statusCode).toBe(204);
    const its = () => all.events().filter((e) => e.account === publicKey && e.type !== "request");
    await until(() => its().length === 4, "the deletion's events");
    const kinds = its().map((e) => `${e.type} ${e.action}`);
    expect(kinds.slice(0, 2)).toEqual(["account created", "mail captured"]);
    // (In either order: the account's deletion is announced as the store tells of it.)
    expect(kinds.slice(2).sort()).toEqual(["account deleted", "mail cleared"]);
    all.close();
    mine.close();
  });

  it("ends open streams when the emulator stops", async () => {
    const server = await listening();
    const local = await fetch(`${server.url}/_mock/v1/events`);
    const reader = local.body!.getReader();
    await reader.read();
    await server.app.close();
    // The stream ends (done or an error), so nothing keeps the process alive.
    const end = await reader.read().then(
      (result) => result.done,
      () => true,
    );
    expect(end).toBe(true);
    await until(() => server.app.emulator.events.size === 0, "the subscription to be released");
  });
});
