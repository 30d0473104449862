/** The inspector's mail operations: search, delete one message, its headers and source. Both stores. */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { headersOf } from "../../src/control/get-mail-source.ts";
import { call, testApp } from "../helpers/app.ts";
import { newAccount, sendEmail } from "../helpers/emailjs.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await testApp();
});
afterAll(async () => {
  await app.close();
});

const template = {
  id: "note",
  subject: "{{title}}",
  to: "{{to_email}}",
  from: "web@notes.example",
  fromName: "Notes",
  html: "<p>{{body}}</p>",
  text: "{{body}}",
};

async function send(publicKey: string, to: string, title: string, body: string) {
  const { response } = await sendEmail(app, {
    user_id: publicKey,
    service_id: "local_service",
    template_id: "note",
    template_params: { to_email: to, title, body },
  });
  expect(response.statusCode).toBe(200);
}

const listMail = async (query: string) =>
  (await call(app, "listMail", { method: "GET", url: `/_mock/v1/mail${query}` })).body.messages as {
    id: string;
    subject: string;
  }[];

describe("listMail search", () => {
  it("finds text in the subject, the recipients or the text body, in any case", async () => {
    const { publicKey } = await newAccount(app, { templates: [template] });
    await send(publicKey, "ada@example.com", "Shopping list", "Milk and eggs");
    await send(publicKey, "bob@example.com", "Holiday", "See you in Lisbon");
    await send(publicKey, "cy@example.com", "Meeting", "Bring the MILK receipts");
    const subjects = async (search: string) =>
      (await listMail(`?account=${publicKey}&search=${encodeURIComponent(search)}`)).map((m) => m.subject);
    expect(await subjects("shopping")).toEqual(["Shopping list"]);
    expect(await subjects("BOB@")).toEqual(["Holiday"]);
    expect(await subjects("milk")).toEqual(["Shopping list", "Meeting"]);
    expect(await subjects("nowhere")).toEqual([]);
    expect(await subjects("  ")).toHaveLength(3);
    // The sender is not searched (only subject, recipients, text).
    expect(await subjects("web@notes")).toEqual([]);
  });
});

describe("deleteMail", () => {
  it("deletes one message, announces it, and answers 404 for it afterwards", async () => {
    const { publicKey } = await newAccount(app, { templates: [template] });
    await send(publicKey, "ada@example.com", "First", "one");
    await send(publicKey, "ada@example.com", "Second", "two");
    const [first, second] = await listMail(`?account=${publicKey}`);
    const events: { type: string; action: string; id?: string; account?: string }[] = [];
    const unsubscribe = app.emulator.events.subscribe((event) => events.push(event));
    try {
      const { response } = await call(app, "deleteMail", { method: "DELETE", url: `/_mock/v1/mail/${first!.id}` });
      expect(response.statusCode).toBe(204);
    } finally {
      unsubscribe();
    }
    expect(events).toContainEqual(
      expect.objectContaining({ type: "mail", action: "deleted", id: first!.id, account: publicKey }),
    );
    expect((await listMail(`?account=${publicKey}`)).map((m) => m.id)).toEqual([second!.id]);
    for (const id of [first!.id, "m-999999999", "nope", "m-99999999999999999999"]) {
      const again = await call(app, "deleteMail", { method: "DELETE", url: `/_mock/v1/mail/${id}` });
      expect([again.response.statusCode, again.body.code], id).toEqual([404, "NotFound"]);
    }
    expect(
      (await call(app, "getMail", { method: "GET", url: `/_mock/v1/mail/${first!.id}` })).response.statusCode,
    ).toBe(404);
  });
});

describe("getMailSource", () => {
  it("answers the message as an e-mail, with its headers in order", async () => {
    const { publicKey } = await newAccount(app, { templates: [template] });
    await send(publicKey, "ada@example.com", "Grüße", "Hello https://example.com/a");
    const [message] = await listMail(`?account=${publicKey}`);
    const { response, body } = await call(app, "getMailSource", {
      method: "GET",
      url: `/_mock/v1/mail/${message!.id}/source`,
    });
    expect(response.statusCode).toBe(200);
    const names = body.headers.map((h: { name: string }) => h.name);
    expect(names).toEqual(
      expect.arrayContaining(["From", "To", "Subject", "Date", "MIME-Version", "Message-ID", "X-Emulator-Message-ID"]),
    );
    const header = (name: string) => body.headers.find((h: { name: string }) => h.name === name)?.value;
    expect(header("From")).toBe("Notes <web@notes.example>");
    expect(header("To")).toBe("ada@example.com");
    expect(header("X-Emulator-Message-ID")).toBe(message!.id);
    expect(header("Subject")).toMatch(/^=\?UTF-8\?/); // non-ASCII, encoded as on the wire
    expect(body.source).toContain("\r\n\r\n");
    expect(body.source).toContain("Hello https://example.com/a");
    expect(body.source).toContain("Content-Type: text/html");

    const missing = await call(app, "getMailSource", { method: "GET", url: "/_mock/v1/mail/m-999999999/source" });
    expect(missing.response.statusCode).toBe(404);
  });

  it("unfolds folded header lines", () => {
    expect(headersOf("Subject: a very\r\n long subject\r\nTo: a@b\r\n\r\nbody: not a header")).toEqual([
      { name: "Subject", value: "a very long subject" },
      { name: "To", value: "a@b" },
    ]);
  });
});
