/** `POST /api/v1.0/email/send-form`: multipart forms, with and without files, as the SDK and browsers send them. */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, testApp } from "../helpers/app.ts";
import { browser, mailOf, newAccount, sendForm } from "../helpers/emailjs.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await testApp();
});
afterAll(async () => {
  await app.close();
});

/** The form's own fields, then the SDK's, in the SDK's order. */
function contactForm(publicKey: string, fields: [string, string | Blob, string?][] = []): FormData {
  const form = new FormData();
  form.append("user_name", "Bob");
  form.append("user_email", "bob@example.com");
  form.append("message", "Hi there\r\nSecond line");
  for (const [name, value, filename] of fields) {
    if (typeof value === "string") form.append(name, value);
    else form.append(name, value, filename);
  }
  form.append("lib_version", "4.4.1");
  form.append("service_id", "local_service");
  form.append("template_id", "contact_form");
  form.append("user_id", publicKey);
  return form;
}

describe("sendForm", () => {
  it("sends a form without files: its fields are the template variables", async () => {
    const { publicKey } = await newAccount(app);
    const { response, body } = await sendForm(app, contactForm(publicKey));
    expect(response.statusCode).toBe(200);
    expect(body).toBe("OK");
    const [mail] = await mailOf(app, publicKey);
    expect(mail).toMatchObject({
      source: "emailjs",
      account: publicKey,
      kind: "contact_form",
      to: "support@notes.example",
      replyTo: "bob@example.com",
      subject: "Contact form: Bob",
      html: "<p><strong>Bob</strong> (bob@example.com) wrote:</p><p>Hi there\r\nSecond line</p>",
      templateParams: { user_name: "Bob", user_email: "bob@example.com", message: "Hi there\r\nSecond line" },
      attachments: [],
    });
  });

  it("records file parts as attachments (name, type, size); an empty file input attaches nothing", async () => {
    const { publicKey } = await newAccount(app);
    const form = contactForm(publicKey, [
      ["resume", new Blob(["%PDF-1.7 hello"], { type: "application/pdf" }), "cv.pdf"],
      ["photo", new Blob([], { type: "application/octet-stream" }), ""],
    ]);
    const { response } = await sendForm(app, form);
    expect(response.statusCode).toBe(200);
    const [mail] = await mailOf(app, publicKey);
    expect(mail?.attachments).toEqual([
      { field: "resume", filename: "cv.pdf", contentType: "application/pdf", size: 14 },
    ]);
    expect(mail?.templateParams).not.toHaveProperty("resume");
    const { body } = await call(app, "listEmailJsRequests", {
      method: "GET",
      url: `/_mock/v1/emailjs/accounts/${publicKey}/requests`,
    });
    expect(body.requests[0].requestBody.attachments).toEqual([
      { field: "resume", filename: "cv.pdf", contentType: "application/pdf", size: 14 },
    ]);
  });

  it("counts the names and types of file parts with the variables: 50 KB in all, as a message keeps them", async () => {
    const { publicKey } = await newAccount(app);
    const tooLarge = "Variables size limit. The maximum allowed variables size is 50Kb";
    // Files of one byte, each with a long name: their bytes do not count, their names do.
    const named = (count: number, length: number) =>
      contactForm(
        publicKey,
        Array.from(
          { length: count },
          (_, i) => [`f${i}`, new Blob(["x"]), `${i}`.padEnd(length, "n")] as [string, Blob, string],
        ),
      );
    const refused = await sendForm(app, named(10, 6 * 1024));
    expect([refused.response.statusCode, refused.response.body]).toEqual([413, tooLarge]);
    expect(await mailOf(app, publicKey)).toEqual([]);
    const taken = await sendForm(app, named(10, 200));
    expect(taken.response.statusCode).toBe(200);
    expect((await mailOf(app, publicKey))[0]?.attachments).toHaveLength(10);
  });

  it("turns a repeated field (a group of checkboxes) into a list shown comma-separated", async () => {
    const { publicKey } = await newAccount(app, {
      templates: [{ id: "t", to: "team@example.com", subject: "Topics", html: "<p>{{topic}}</p>", text: "{{topic}}" }],
    });
    const form = new FormData();
    form.append("topic", "billing");
    form.append("topic", "support");
    form.append("service_id", "local_service");
    form.append("template_id", "t");
    form.append("user_id", publicKey);
    expect((await sendForm(app, form)).response.statusCode).toBe(200);
    const [mail] = await mailOf(app, publicKey);
    expect(mail).toMatchObject({ text: "billing, support", templateParams: { topic: ["billing", "support"] } });
  });

  it("uses the SDK's fields (appended last) over a form field of the same name", async () => {
    const { publicKey } = await newAccount(app);
    const form = new FormData();
    form.append("user_id", "from-the-form");
    form.append("user_name", "Bob");
    form.append("user_email", "bob@example.com");
    form.append("service_id", "local_service");
    form.append("template_id", "contact_form");
    form.append("user_id", publicKey);
    expect((await sendForm(app, form)).response.statusCode).toBe(200);
  });

  it("answers the same errors as send", async () => {
    const strict = await newAccount(app, { requirePrivateKey: true, privateKey: "secret-private-key" });
    const cases: [FormData, Record<string, string>, number, string][] = [
      [
        contactForm("no-such-key"),
        browser,
        400,
        "The Public Key is invalid. To find this ID, visit https://dashboard.emailjs.com/admin/account",
      ],
      [contactForm(strict.publicKey), {}, 403, "API calls are disabled for non-browser applications"],
      [
        contactForm(strict.publicKey),
        browser,
        403,
        "The Private Key is required. To find this ID, visit https://dashboard.emailjs.com/admin/account/security",
      ],
    ];
    for (const [form, headers, status, text] of cases) {
      const { response } = await sendForm(app, form, headers);
      expect([response.statusCode, response.body]).toEqual([status, text]);
    }
    const open = await newAccount(app);
    const tooLarge = "Variables size limit. The maximum allowed variables size is 50Kb";
    for (const size of [50 * 1024, 50 * 1024 + 2, 200 * 1024]) {
      // Every size puts the variables (as JSON) over 50 KB; the larger ones also pass the multipart field limit.
      const { response } = await sendForm(app, contactForm(open.publicKey, [["extra", "x".repeat(size)]]));
      expect([response.statusCode, response.body]).toEqual([413, tooLarge]);
    }
    const withKey = contactForm(strict.publicKey, [["accessToken", "secret-private-key"]]);
    expect((await sendForm(app, withKey)).response.statusCode).toBe(200);
    const form = new FormData();
    form.append("user_name", "Bob");
    const { response } = await sendForm(app, form);
    expect([response.statusCode, response.body]).toEqual([400, "The user_id parameter is required"]);
  });

  it("takes any field name as a variable, `constructor` and `toString` too, as send takes them", async () => {
    const { publicKey } = await newAccount(app);
    const names = ["constructor", "toString", "valueOf", "hasOwnProperty", "__proto__"];
    const form = contactForm(publicKey, [
      ...names.map((name): [string, string] => [name, `value of ${name}`]),
      ["picture", new Blob(["png"], { type: "image/png" }), "a.png"],
      ["toString", new Blob(["txt"], { type: "text/plain" }), "b.txt"],
    ]);
    const { response, body } = await sendForm(app, form);
    expect([response.statusCode, body]).toEqual([200, "OK"]);
    const [mail] = await mailOf(app, publicKey);
    const params = mail!.templateParams as Record<string, unknown>;
    for (const name of names) expect(Object.getOwnPropertyDescriptor(params, name)?.value).toBe(`value of ${name}`);
    expect((mail!.attachments as { field: string }[]).map((file) => file.field)).toEqual(["picture", "toString"]);
  });

  it("keeps a field's text as sent, whatever its part's type, and takes nothing from a part without a name", async () => {
    const { publicKey } = await newAccount(app);
    const part = (headers: string, value: string) => `--zz\r\n${headers}\r\n\r\n${value}\r\n`;
    const payload = [
      part('Content-Disposition: form-data; name="user_name"\r\nContent-Type: application/json', '{"first":"Bob"}'),
      part("Content-Disposition: form-data", "a part without a name"),
      part('Content-Disposition: form-data; filename="nameless.txt"\r\nContent-Type: text/plain', "bytes"),
      part('Content-Disposition: form-data; name="user_email"', "bob@example.com"),
      part('Content-Disposition: form-data; name="service_id"', "local_service"),
      part('Content-Disposition: form-data; name="template_id"', "contact_form"),
      part('Content-Disposition: form-data; name="user_id"', publicKey),
      "--zz--\r\n",
    ].join("");
    const { response } = await call(app, "sendForm", {
      method: "POST",
      url: "/api/v1.0/email/send-form",
      headers: { ...browser, "content-type": "multipart/form-data; boundary=zz" },
      payload,
    });
    expect(response.statusCode).toBe(200);
    const [mail] = await mailOf(app, publicKey);
    expect(mail!.templateParams).toEqual({ user_name: '{"first":"Bob"}', user_email: "bob@example.com" });
    expect(mail!.attachments).toEqual([]);
  });

  it("checks the public key and the caller before the variables' size, as send does", async () => {
    const large: [string, string][] = [["extra", "x".repeat(60_000)]];
    const strict = await newAccount(app, { requirePrivateKey: true, privateKey: "secret-private-key" });
    for (const [form, headers, status, text] of [
      [
        contactForm("no-such-key", large),
        browser,
        400,
        "The Public Key is invalid. To find this ID, visit https://dashboard.emailjs.com/admin/account",
      ],
      [contactForm(strict.publicKey, large), {}, 403, "API calls are disabled for non-browser applications"],
    ] as const) {
      const { response } = await sendForm(app, form, headers);
      expect([response.statusCode, response.body]).toEqual([status, text]);
    }
    const form = new FormData();
    form.append("extra", "x".repeat(60_000));
    const { response } = await sendForm(app, form);
    expect([response.statusCode, response.body]).toEqual([400, "The user_id parameter is required"]);
  });

  it("answers 400 for a body that is not multipart, or broken multipart", async () => {
    const raw = (payload: string, type: string) =>
      call(app, "sendForm", {
        method: "POST",
        url: "/api/v1.0/email/send-form",
        headers: { ...browser, "content-type": type },
        payload,
      });
    for (const [payload, type] of [
      [JSON.stringify({ user_id: "local-public-key" }), "application/json"],
      ["garbage", "multipart/form-data"],
      ['--zz\r\nContent-Disposition: form-data; name="a"\r\n\r\nunterminated', "multipart/form-data; boundary=zz"],
      ["user_id=local-public-key", "application/x-www-form-urlencoded"],
    ] as const) {
      const { response } = await raw(payload, type);
      expect([response.statusCode, response.body]).toEqual([400, "The request body is invalid"]);
    }
  });

  it("needs no preflight (multipart is CORS-safelisted) and answers any origin", async () => {
    const { publicKey } = await newAccount(app);
    const { response } = await sendForm(app, contactForm(publicKey), { origin: "https://any.example" });
    expect(response.headers["access-control-allow-origin"]).toBe("*");
  });
});
