/**
 * The official `@emailjs/browser` 4.4.1 SDK, unchanged, pointed at a listening emulator with
 * `init({ publicKey, origin })`. The page comes from jsdom: the SDK reads `location`, `navigator` and
 * builds `new FormData(form)` from a real HTML form. Node's fetch sends no Origin header, so the
 * accounts that should accept allow non-browser callers; the 403 path is tested too.
 */
import { createRequire } from "node:module";
import { EmailJSResponseStatus, init, send, sendForm } from "@emailjs/browser";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call } from "../helpers/app.ts";
import { newAccount } from "../helpers/emailjs.ts";
import { expectFetchContract } from "../helpers/fetch-contract.ts";
import { listening } from "../helpers/listen.ts";

interface JsdomWindow extends Window {
  FormData: typeof FormData;
  HTMLFormElement: typeof HTMLFormElement;
}
const { JSDOM } = createRequire(import.meta.url)("jsdom") as {
  JSDOM: new (html: string, options: { url: string }) => { window: JsdomWindow };
};

const page = `<!doctype html><html><body>
<form id="contact">
  <label>Name <input name="user_name" value="Bob"></label>
  <label>E-mail <input type="email" name="user_email" value="bob@example.com"></label>
  <label>Message <textarea name="message">Hi there
Second line</textarea></label>
  <label><input type="checkbox" name="newsletter" value="yes" checked> Newsletter</label>
  <label><input type="checkbox" name="terms" value="yes"> Terms</label>
  <label>Topic <select name="topic"><option>billing</option><option selected>support</option></select></label>
  <label>Attachment <input type="file" name="attachment"></label>
  <input name="disabled_field" value="x" disabled>
  <button name="send" value="clicked">Send</button>
</form>
</body></html>`;

const dom = new JSDOM(page, { url: "http://127.0.0.1:5173/contact" });
const form = dom.window.document.getElementById("contact") as HTMLFormElement;

/** Node's FormData, filled from a jsdom form as a browser's `new FormData(form)` would be. */
const NodeFormData = globalThis.FormData;
class FormDataFromForm extends NodeFormData {
  constructor(from?: HTMLFormElement) {
    super();
    if (!from) return;
    for (const [name, value] of new dom.window.FormData(from) as unknown as Iterable<[string, string | File]>) {
      if (typeof value === "string") this.append(name, value);
      else if (value.size === 0) this.append(name, new File([], value.name, { type: value.type }));
      else throw new Error("the test page has no file with content (jsdom cannot hand file bytes over synchronously)");
    }
  }
}

const globals = ["location", "navigator", "document", "HTMLFormElement", "FormData", "fetch"] as const;
const saved = new Map(globals.map((name) => [name, Object.getOwnPropertyDescriptor(globalThis, name)]));
const setGlobal = (name: (typeof globals)[number], value: unknown) =>
  Object.defineProperty(globalThis, name, { value, configurable: true, writable: true });

let app: FastifyInstance;
let url: string;
const realFetch = globalThis.fetch;
let checkedReplies = 0;

beforeAll(async () => {
  ({ app, url } = await listening());
  setGlobal("location", dom.window.location);
  setGlobal("navigator", dom.window.navigator);
  setGlobal("document", dom.window.document);
  setGlobal("HTMLFormElement", dom.window.HTMLFormElement);
  setGlobal("FormData", FormDataFromForm);
  // Every reply the SDK reads is checked against the EmailJS document.
  setGlobal("fetch", async (input: RequestInfo | URL, requestInit?: RequestInit) => {
    const response = await realFetch(input, requestInit);
    await expectFetchContract(String(input).endsWith("/send-form") ? "sendForm" : "sendEmail", response);
    checkedReplies++;
    return response;
  });
});

afterAll(async () => {
  for (const [name, descriptor] of saved) {
    if (descriptor) Object.defineProperty(globalThis, name, descriptor);
    else delete (globalThis as Record<string, unknown>)[name];
  }
  await app.close();
  dom.window.close();
});

async function mailOf(publicKey: string) {
  const { body } = await call(app, "listMail", { method: "GET", url: `/_mock/v1/mail?account=${publicKey}` });
  return body.messages as Record<string, unknown>[];
}

describe("@emailjs/browser against the emulator", () => {
  it("send resolves with 200 OK and the e-mail is captured", async () => {
    const { publicKey } = await newAccount(app, { allowNonBrowser: true });
    init({ publicKey, origin: url });
    const result = await send("local_service", "local_template", {
      to_email: "ann@example.com",
      subject: "Hi",
      message: "Hello Ann",
    });
    expect(result).toBeInstanceOf(EmailJSResponseStatus);
    expect(result).toMatchObject({ status: 200, text: "OK" });
    const [mail] = await mailOf(publicKey);
    expect(mail).toMatchObject({ kind: "local_template", to: "ann@example.com", subject: "Hi", text: "Hello Ann" });
    const { body } = await call(app, "listEmailJsRequests", {
      method: "GET",
      url: `/_mock/v1/emailjs/accounts/${publicKey}/requests`,
    });
    expect(body.requests[0].requestBody).toMatchObject({ lib_version: "4.4.1", user_id: publicKey });
  });

  it("send rejects with the service's status and text", async () => {
    const { publicKey } = await newAccount(app, { allowNonBrowser: true });
    init({ publicKey, origin: url });
    await expect(send("local_service", "no_such_template", {})).rejects.toMatchObject({
      status: 400,
      text: "The template ID not found. To find this ID, visit https://dashboard.emailjs.com/admin/templates",
    });
    init({ publicKey: "no-such-key", origin: url });
    await expect(send("local_service", "local_template", {})).rejects.toMatchObject({ status: 400 });
  });

  it("sendForm sends a real HTML form: its successful controls are the template variables", async () => {
    const { publicKey } = await newAccount(app, { allowNonBrowser: true });
    init({ publicKey, origin: url });
    const result = await sendForm("local_service", "contact_form", form);
    expect(result).toMatchObject({ status: 200, text: "OK" });
    const [mail] = await mailOf(publicKey);
    expect(mail).toMatchObject({
      kind: "contact_form",
      subject: "Contact form: Bob",
      replyTo: "bob@example.com",
      // No button, no unchecked box, no disabled field; the textarea's line break is CRLF; the empty file input attaches nothing.
      templateParams: {
        user_name: "Bob",
        user_email: "bob@example.com",
        message: "Hi there\r\nSecond line",
        newsletter: "yes",
        topic: "support",
      },
      attachments: [],
    });
  });

  it("sendForm also takes a selector of the form", async () => {
    const { publicKey } = await newAccount(app, { allowNonBrowser: true });
    init({ publicKey, origin: url });
    await expect(sendForm("default_service", "contact_form", "#contact")).resolves.toMatchObject({ status: 200 });
    expect(await mailOf(publicKey)).toHaveLength(1);
  });

  it("an account that refuses non-browser callers answers 403 to Node's fetch (no Origin)", async () => {
    const { publicKey } = await newAccount(app, { allowNonBrowser: false });
    init({ publicKey, origin: url });
    const expected = { status: 403, text: "API calls are disabled for non-browser applications" };
    await expect(send("local_service", "local_template", { to_email: "ann@example.com" })).rejects.toMatchObject(
      expected,
    );
    await expect(sendForm("local_service", "contact_form", form)).rejects.toMatchObject(expected);
    expect(await mailOf(publicKey)).toHaveLength(0);
  });

  it("the server's rate limit reaches the SDK as a rejected 429", async () => {
    const { publicKey } = await newAccount(app, { allowNonBrowser: true, rateLimitPerSecond: 1 });
    init({ publicKey, origin: url });
    const params = { to_email: "ann@example.com", message: "x" };
    await expect(send("local_service", "local_template", params)).resolves.toMatchObject({ status: 200 });
    await expect(send("local_service", "local_template", params)).rejects.toMatchObject({
      status: 429,
      text: "Too Many Requests",
    });
  });

  it("an injected provider failure reaches the SDK as the fault's status and text", async () => {
    const { publicKey } = await newAccount(app, { allowNonBrowser: true });
    await call(app, "addEmailJsFault", {
      method: "POST",
      url: `/_mock/v1/emailjs/accounts/${publicKey}/faults`,
      payload: {
        operationId: "sendForm",
        status: 412,
        body: "Gmail_API: Request had insufficient authentication scopes.",
      },
    });
    init({ publicKey, origin: url });
    await expect(sendForm("local_service", "contact_form", form)).rejects.toMatchObject({
      status: 412,
      text: "Gmail_API: Request had insufficient authentication scopes.",
    });
    await expect(sendForm("local_service", "contact_form", form)).resolves.toMatchObject({ status: 200 });
  });

  it("went through the SDK's own fetch calls, each reply checked against the EmailJS document", () => {
    expect(checkedReplies).toBe(11);
  });
});
