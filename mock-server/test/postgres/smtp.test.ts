/**
 * Real mail from the database outbox: a message queued while the SMTP server is down is not lost
 * when the emulator stops — the next instance on the database delivers it, with the right sender,
 * recipient, subject and a link that works; several instances sending from one outbox send each
 * message once.
 */
import { afterEach, describe, expect, it } from "vitest";
import { type RunningServer, startServer } from "../../src/server.ts";
import { expectFetchContract } from "../helpers/fetch-contract.ts";
import { emulatorDatabase, type TestDatabase } from "../helpers/postgres.ts";
import { downPort, expectDeliveredConfirmation, register, smtpServer } from "../helpers/smtp.ts";
import { until } from "../helpers/until.ts";

const servers: RunningServer[] = [];
const closers: (() => Promise<void>)[] = [];
const databases: TestDatabase[] = [];

afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
  for (const close of closers.splice(0)) await close();
  for (const db of databases.splice(0)) await db.drop();
});

/** A port nothing listens on (yet). */

async function emulator(databaseUrl: string, smtpPort: number) {
  const server = await startServer({
    port: 0,
    logLevel: "silent",
    watchFunctions: false,
    passwordHashCost: 4,
    databaseUrl,
    signingSecret: "smtp-test-signing-secret-0123456789",
    smtpUrl: `smtp://127.0.0.1:${smtpPort}`,
    smtpRetry: { baseDelayMs: 20, maxDelayMs: 100, maxRefusals: 3 },
  });
  servers.push(server);
  return server;
}

async function messages(url: string, to?: string) {
  const response = await fetch(`${url}/_mock/v1/mail${to ? `?to=${encodeURIComponent(to)}` : ""}`);
  return (
    (await expectFetchContract("listMail", response)) as {
      messages: { id: string; from: string; subject: string; links: string[]; delivery?: { state: string } }[];
    }
  ).messages;
}

describe("the database outbox", () => {
  it("keeps mail queued while SMTP is down across a restart, and the next instance delivers it", async () => {
    const database = await emulatorDatabase("outbox");
    databases.push(database);
    const down = await downPort();
    closers.push(down.free);
    const smtpPort = down.port;
    const first = await emulator(database.url, smtpPort);
    expect((await register(first.url, "ada@example.com")).status).toBe(201);
    // Tried and failed (the connection dropped): still queued.
    await until(async () => {
      const [message] = await messages(first.url, "ada@example.com");
      return message?.delivery?.state === "queued" && (message.delivery as { attempts?: number }).attempts! >= 1;
    }, "a failed first attempt");
    await first.close();
    servers.splice(servers.indexOf(first), 1);

    await down.free();
    const smtp = await smtpServer(smtpPort);
    closers.push(smtp.close);
    const second = await emulator(database.url, smtpPort);
    const got = await until(
      () => smtp.received.find((m) => m.to.includes("ada@example.com")),
      "delivery by the next instance",
      { timeoutMs: 10_000 },
    );
    const [message] = await until(async () => {
      const found = await messages(second.url, "ada@example.com");
      return found[0]?.delivery?.state === "sent" ? found : null;
    }, "the delivery state");
    await expectDeliveredConfirmation(second.url, got, message!);
  });

  it("sends each message once when several instances deliver from it", async () => {
    const database = await emulatorDatabase("outbox-two");
    databases.push(database);
    const smtp = await smtpServer();
    closers.push(smtp.close);
    const [a, b] = [await emulator(database.url, smtp.port), await emulator(database.url, smtp.port)];
    const addresses = Array.from({ length: 12 }, (_, i) => `user${i}@example.com`);
    const replies = await Promise.all(addresses.map((email, i) => register((i % 2 ? a : b).url, email)));
    expect(replies.map((r) => r.status)).toEqual(addresses.map(() => 201));
    await until(
      async () => (await messages(a.url)).filter((m) => m.delivery?.state === "sent").length === addresses.length,
      "every message sent",
      { timeoutMs: 10_000 },
    );
    const recipients = smtp.received.flatMap((m) => m.to).sort();
    expect(recipients).toEqual([...addresses].sort());
  });
});
