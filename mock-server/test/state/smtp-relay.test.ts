/**
 * `--smtp`: captured mail is delivered to a real SMTP server started by the test (smtp-server),
 * with the right sender, recipient, subject and a working link; retried while the server is down;
 * refused messages are reported, not lost silently and never a crash; queued mail survives a
 * restart (`--data-dir`). Every wait is on a condition.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SMTPServer } from "smtp-server";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type RunningServer, startServer } from "../../src/server.ts";
import { checkSmtpUrl } from "../../src/state/smtp-relay.ts";
import { decodeQuotedPrintable, downPort, expectDeliveredConfirmation, register, smtpServer } from "../helpers/smtp.ts";
import { until } from "../helpers/until.ts";

const fast = { baseDelayMs: 20, maxDelayMs: 100, maxRefusals: 3 };
let dataDir: string;
const servers: RunningServer[] = [];
const closers: (() => Promise<void>)[] = [];

beforeAll(() => {
  dataDir = mkdtempSync(join(tmpdir(), "smtp-relay-"));
});
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
  for (const close of closers.splice(0)) await close();
});
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

async function emulator(smtpPort: number, extra: Parameters<typeof startServer>[0] = {}) {
  const server = await startServer({
    port: 0,
    logLevel: "silent",
    watchFunctions: false,
    passwordHashCost: 4,
    smtpUrl: `smtp://127.0.0.1:${smtpPort}`,
    smtpRetry: fast,
    ...extra,
  });
  servers.push(server);
  return server;
}

const mailOf = async (url: string, to: string) => {
  const response = await fetch(`${url}/_mock/v1/mail?to=${encodeURIComponent(to)}`);
  return ((await response.json()) as { messages: Array<{ id: string; delivery?: Record<string, unknown> }> })
    .messages[0];
};

describe("mail over SMTP", () => {
  it("delivers the confirmation mail with sender, recipient, subject and a link that confirms", async () => {
    const smtp = await smtpServer();
    closers.push(smtp.close);
    const server = await emulator(smtp.port);
    expect((await register(server.url, "ada@example.com")).status).toBe(201);
    const got = await until(() => smtp.received.find((m) => m.to.includes("ada@example.com")), "the SMTP delivery");
    const captured = await until(async () => {
      const m = await mailOf(server.url, "ada@example.com");
      return m?.delivery?.state === "sent" ? m : null;
    }, "the delivery state");
    const message = (await server.emulator.store.mail.get(captured.id))!;
    expect(got.raw).toMatch(new RegExp(`^X-Emulator-Message-Id: ${message.id}\\r$`, "im"));
    await expectDeliveredConfirmation(server.url, got, message);
  });

  it("delivers EmailJS sends too", async () => {
    const smtp = await smtpServer();
    closers.push(smtp.close);
    const server = await emulator(smtp.port);
    const account = (await server.emulator.emailjs.list())[0]!;
    const sent = await fetch(`${server.url}/api/v1.0/email/send`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: "http://127.0.0.1:5173" },
      body: JSON.stringify({
        user_id: account.publicKey,
        service_id: "local_service",
        template_id: "local_template",
        template_params: { to_email: "ann@example.com", subject: "Hello Ann", message: "Hi Ann" },
      }),
    });
    expect(sent.status).toBe(200);
    const got = await until(() => smtp.received.find((m) => m.to.includes("ann@example.com")), "the EmailJS delivery");
    expect(decodeQuotedPrintable(got.raw)).toContain("Hi Ann");
  });

  it("retries while the SMTP server is down, and delivers once it is back", async () => {
    const down = await downPort();
    closers.push(down.free);
    const { port } = down;
    const server = await emulator(port);
    await register(server.url, "bob@example.com");
    const queued = await until(async () => {
      const m = await mailOf(server.url, "bob@example.com");
      return m?.delivery && (m.delivery.attempts as number) >= 2 ? m : null;
    }, "failed attempts");
    expect(queued.delivery).toMatchObject({ state: "queued", lastError: "Connection closed unexpectedly" });
    await down.free();
    const smtp = await smtpServer(port);
    closers.push(smtp.close);
    await until(() => smtp.received.find((m) => m.to.includes("bob@example.com")), "delivery after the outage");
    await until(async () => (await mailOf(server.url, "bob@example.com"))?.delivery?.state === "sent", "sent state");
  });

  it("reports a message the server keeps refusing as failed, and keeps delivering the others", async () => {
    const smtp = await smtpServer(0, /^refused@/);
    closers.push(smtp.close);
    const server = await emulator(smtp.port);
    await register(server.url, "refused@example.com");
    await register(server.url, "fine@example.com");
    await until(() => smtp.received.find((m) => m.to.includes("fine@example.com")), "the other message");
    const failed = await until(async () => {
      const m = await mailOf(server.url, "refused@example.com");
      return m?.delivery?.state === "failed" ? m : null;
    }, "the failed state");
    expect(failed.delivery).toMatchObject({ attempts: 3, refusals: 3, lastError: expect.stringContaining("550") });
    expect((await fetch(`${server.url}/_mock/v1/health`)).status).toBe(200);
  });

  it("keeps queued mail across a restart and delivers it after", async () => {
    const down = await downPort();
    closers.push(down.free);
    const { port } = down;
    const first = await emulator(port, { dataDir });
    await register(first.url, "cy@example.com");
    await until(async () => (await mailOf(first.url, "cy@example.com"))?.delivery?.attempts, "a first attempt");
    await first.close();
    servers.splice(servers.indexOf(first), 1);
    await down.free();
    const smtp = await smtpServer(port);
    closers.push(smtp.close);
    const second = await emulator(port, { dataDir });
    await until(() => smtp.received.find((m) => m.to.includes("cy@example.com")), "delivery after the restart");
    await until(async () => (await mailOf(second.url, "cy@example.com"))?.delivery?.state === "sent", "sent state");
  });

  it("checks the URL at start", () => {
    expect(checkSmtpUrl("smtp://user:pw@mail.example:587")).toBeNull();
    expect(checkSmtpUrl("smtps://mail.example")).toBeNull();
    expect(checkSmtpUrl("mail.example")).toMatch(/not a URL/);
    expect(checkSmtpUrl("http://mail.example")).toMatch(/smtp:\/\//);
  });

  it("gives up on a server that goes silent mid-message, tries again, and does not hold the shutdown", async () => {
    // A server that takes the message's data and never answers it (nodemailer waited 10 minutes,
    // every other message behind it, and the shutdown with them).
    const silent = new SMTPServer({
      authOptional: true,
      disabledCommands: ["STARTTLS"],
      logger: false,
      onData(stream) {
        stream.resume();
      },
    });
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    closers.push(() => new Promise<void>((resolve) => silent.close(() => resolve())));
    const port = (silent.server.address() as { port: number }).port;
    const server = await emulator(port, {
      smtpRetry: { ...fast, timeouts: { silenceMs: 300 }, closeWaitMs: 200 },
    });
    expect((await register(server.url, "quiet@example.com")).status).toBe(201);
    const retried = await until(async () => {
      const message = await mailOf(server.url, "quiet@example.com");
      return message?.delivery?.state === "queued" && Number(message.delivery.attempts) >= 1 ? message : null;
    }, "an attempt given up and to be tried again");
    expect(retried.delivery).toMatchObject({ state: "queued", lastError: expect.stringMatching(/timeout/i) });
    // An attempt is under way again (the server is still silent): the shutdown does not wait for it.
    servers.splice(servers.indexOf(server), 1);
    await server.close();
  }, 20_000);
});
