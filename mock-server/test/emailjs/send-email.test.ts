/** `POST /api/v1.0/email/send`: every reply the EmailJS reference records, the emulator's choices, and the captured mail. */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, testApp, testStore } from "../helpers/app.ts";
import { browser, mailOf, newAccount, sendEmail } from "../helpers/emailjs.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await testApp();
});
afterAll(async () => {
  await app.close();
});

const dashboard = "https://dashboard.emailjs.com/admin";
const texts = {
  userIdRequired: "The user_id parameter is required",
  publicKeyInvalid: `The Public Key is invalid. To find this ID, visit ${dashboard}/account`,
  serviceIdRequired: "The service_id parameter is required",
  serviceNotFound: `The service ID not found. To find this ID, visit ${dashboard}`,
  templateIdRequired: "The template_id parameter is required",
  templateNotFound: `The template ID not found. To find this ID, visit ${dashboard}/templates`,
  tooLarge: "Variables size limit. The maximum allowed variables size is 50Kb",
  nonBrowser: "API calls are disabled for non-browser applications",
  privateKeyRequired: `The Private Key is required. To find this ID, visit ${dashboard}/account/security`,
  privateKeyInvalid: `The Private Key is invalid. To find this ID, visit ${dashboard}/account/security`,
  recipientsEmpty: "The recipients address is empty",
  recipientsCorrupted: "The recipients address is corrupted",
  rateLimited: "Too Many Requests",
  malformed: "The request body is invalid",
};

const send = (publicKey: string, extra: Record<string, unknown> = {}) => ({
  lib_version: "4.4.1",
  user_id: publicKey,
  service_id: "local_service",
  template_id: "local_template",
  template_params: { to_email: "ann@example.com", subject: "Hello", message: "Hi Ann" },
  ...extra,
});

function expectText(
  response: { statusCode: number; headers: Record<string, unknown>; body: string },
  status: number,
  text: string,
) {
  expect(response.statusCode).toBe(status);
  expect(String(response.headers["content-type"])).toMatch(/^text\/plain/);
  expect(response.body).toBe(text);
}

describe("sendEmail accepts", () => {
  it("answers 200 text/plain OK and captures the e-mail with its template rendered", async () => {
    const { publicKey } = await newAccount(app);
    const { response, body } = await sendEmail(app, send(publicKey));
    expectText(response, 200, "OK");
    expect(body).toBe("OK");
    const [mail] = await mailOf(app, publicKey);
    expect(mail).toMatchObject({
      source: "emailjs",
      account: publicKey,
      kind: "local_template",
      to: "ann@example.com",
      from: "web@notes.example",
      fromName: "Notes",
      subject: "Hello",
      html: "<p>Hi Ann</p>",
      text: "Hi Ann",
      templateParams: { to_email: "ann@example.com", subject: "Hello", message: "Hi Ann" },
      links: [],
      attachments: [],
    });
    expect(mail).not.toHaveProperty("appId");
  });

  it("takes the keyword default_service as the account's default service", async () => {
    const { publicKey } = await newAccount(app);
    const { response } = await sendEmail(app, send(publicKey, { service_id: "default_service" }));
    expectText(response, 200, "OK");
  });

  it("substitutes variables EmailJS-style: {{x}} HTML-escaped in the HTML body, {{{x}}} raw, plain text elsewhere", async () => {
    const { publicKey } = await newAccount(app, {
      templates: [
        {
          id: "t",
          subject: "Order {{order.id}} for {{name}}",
          to: "{{email}}",
          from: "shop@example.com",
          fromName: "{{shop}}",
          replyTo: "{{reply_to}}",
          html: "<p>{{name}} wrote {{note}}</p>{{{banner}}}<a href='{{link}}'>open</a> {{items}} {{n}} {{missing}}.",
          text: "{{name}} wrote {{note}}: {{link}}",
        },
      ],
    });
    const params = {
      name: "O'Brien & Sons",
      email: "Ann <ann@example.com>",
      shop: "Shop",
      reply_to: "",
      note: "<script>alert(1)</script>",
      banner: "<b>Sale</b>",
      link: "https://shop.example.com/orders/7?a=1&b=2",
      items: ["tea", "milk"],
      n: 3,
      order: { id: 7 },
    };
    const { response } = await sendEmail(app, send(publicKey, { template_id: "t", template_params: params }));
    expectText(response, 200, "OK");
    const [mail] = await mailOf(app, publicKey);
    expect(mail).toMatchObject({
      subject: "Order 7 for O'Brien & Sons",
      to: "Ann <ann@example.com>",
      fromName: "Shop",
      html:
        "<p>O&#39;Brien &amp; Sons wrote &lt;script&gt;alert(1)&lt;/script&gt;</p><b>Sale</b>" +
        "<a href='https://shop.example.com/orders/7?a=1&amp;b=2'>open</a> tea, milk 3 .",
      text: "O'Brien & Sons wrote <script>alert(1)</script>: https://shop.example.com/orders/7?a=1&b=2",
      links: ["https://shop.example.com/orders/7?a=1&b=2"],
    });
    // An empty Reply-To is left out.
    expect(mail).not.toHaveProperty("replyTo");
  });

  it("accepts template_params absent or null (the template then renders empty variables)", async () => {
    const { publicKey } = await newAccount(app, {
      templates: [{ id: "fixed", to: "team@example.com", subject: "Ping", html: "<p>{{x}}</p>", text: "" }],
    });
    for (const params of [undefined, null]) {
      const { response } = await sendEmail(app, send(publicKey, { template_id: "fixed", template_params: params }));
      expectText(response, 200, "OK");
    }
    const mail = await mailOf(app, publicKey);
    expect(mail.map((m) => [m.html, m.templateParams])).toEqual([
      ["<p></p>", {}],
      ["<p></p>", {}],
    ]);
  });

  it("reads the header Content-type in any spelling, as the SDK sends it", async () => {
    const { publicKey } = await newAccount(app);
    const { response } = await call(app, "sendEmail", {
      method: "POST",
      url: "/api/v1.0/email/send",
      headers: { ...browser, "Content-type": "application/json" },
      payload: JSON.stringify(send(publicKey)),
    });
    expectText(response, 200, "OK");
  });
});

describe("sendEmail rejects, with the service's texts", () => {
  it("a missing, empty or non-string user_id: 400 user_id required", async () => {
    for (const user_id of [undefined, "", 42]) {
      const { response } = await sendEmail(app, send("x", { user_id }));
      expectText(response, 400, texts.userIdRequired);
    }
  });

  it("an unknown public key: 400 Public Key invalid", async () => {
    const { response } = await sendEmail(app, send("no-such-key"));
    expectText(response, 400, texts.publicKeyInvalid);
  });

  it("a missing or unknown service id: 400", async () => {
    const { publicKey } = await newAccount(app);
    expectText(
      (await sendEmail(app, send(publicKey, { service_id: undefined }))).response,
      400,
      texts.serviceIdRequired,
    );
    expectText((await sendEmail(app, send(publicKey, { service_id: "nope" }))).response, 400, texts.serviceNotFound);
  });

  it("a missing or unknown template id: 400", async () => {
    const { publicKey } = await newAccount(app);
    expectText(
      (await sendEmail(app, send(publicKey, { template_id: undefined }))).response,
      400,
      texts.templateIdRequired,
    );
    expectText((await sendEmail(app, send(publicKey, { template_id: "nope" }))).response, 400, texts.templateNotFound);
  });

  it("variables over 50 KB: 413 (exactly 50 KB passes)", async () => {
    const { publicKey } = await newAccount(app);
    const exact = (size: number) => {
      const wrapper = JSON.stringify({ to_email: "ann@example.com", pad: "" }).length;
      return { to_email: "ann@example.com", pad: "x".repeat(size - wrapper) };
    };
    expectText((await sendEmail(app, send(publicKey, { template_params: exact(50 * 1024) }))).response, 200, "OK");
    expectText(
      (await sendEmail(app, send(publicKey, { template_params: exact(50 * 1024 + 1) }))).response,
      413,
      texts.tooLarge,
    );
    expect(await mailOf(app, publicKey)).toHaveLength(1);
  });

  it("a caller without Origin (not a browser) unless the account allows non-browser calls: 403", async () => {
    const strict = await newAccount(app, { allowNonBrowser: false });
    expectText((await sendEmail(app, send(strict.publicKey), {})).response, 403, texts.nonBrowser);
    expectText((await sendEmail(app, send(strict.publicKey), browser)).response, 200, "OK");
    const open = await newAccount(app, { allowNonBrowser: true });
    expectText((await sendEmail(app, send(open.publicKey), {})).response, 200, "OK");
  });

  it("the default account refuses non-browser callers, like the service's default setting", async () => {
    expectText((await sendEmail(app, send("local-public-key"), {})).response, 403, texts.nonBrowser);
  });

  it("a missing or wrong private key (accessToken) when the account requires it: 403", async () => {
    const { publicKey, privateKey } = await newAccount(app, { requirePrivateKey: true });
    expect(privateKey).toMatch(/^sk-/);
    expectText((await sendEmail(app, send(publicKey))).response, 403, texts.privateKeyRequired);
    expectText(
      (await sendEmail(app, send(publicKey, { accessToken: "wrong-key" }))).response,
      403,
      texts.privateKeyInvalid,
    );
    expectText((await sendEmail(app, send(publicKey, { accessToken: privateKey }))).response, 200, "OK");
  });

  it("an empty or corrupted recipient address after substitution: 422", async () => {
    const { publicKey } = await newAccount(app);
    const withTo = (to_email: string) => send(publicKey, { template_params: { to_email, message: "x" } });
    expectText((await sendEmail(app, withTo(""))).response, 422, texts.recipientsEmpty);
    expectText((await sendEmail(app, withTo(" , "))).response, 422, texts.recipientsEmpty);
    expectText((await sendEmail(app, withTo("not-an-address"))).response, 422, texts.recipientsCorrupted);
    expectText((await sendEmail(app, withTo("a@example.com, broken"))).response, 422, texts.recipientsCorrupted);
    expectText((await sendEmail(app, withTo("a@example.com; B <b@example.com>"))).response, 200, "OK");
    expect(await mailOf(app, publicKey)).toHaveLength(1);
  });

  it("a body that is not the documented shape: 400", async () => {
    const { publicKey } = await newAccount(app);
    const raw = (payload: string, type = "application/json") =>
      call(app, "sendEmail", {
        method: "POST",
        url: "/api/v1.0/email/send",
        headers: { ...browser, "content-type": type },
        payload,
      });
    expectText((await raw("{not json")).response, 400, texts.malformed);
    expectText((await raw("[1,2]")).response, 400, texts.malformed);
    expectText(
      (await raw(JSON.stringify(send(publicKey, { template_params: "text" })))).response,
      400,
      texts.malformed,
    );
    expectText((await raw("user_id=x", "text/plain")).response, 400, texts.malformed);
    expectText((await raw("")).response, 400, texts.malformed);
  });
});

describe("an account deleted while a send runs", () => {
  it("refuses the send as one a moment later (400 public key invalid) and keeps no mail of it", async () => {
    const { publicKey } = await newAccount(app);
    const emulator = app.emulator;
    const sendMail = emulator.sendMail.bind(emulator);
    // The account deleted (its mail cleared) after the send found it, before its mail is captured.
    emulator.sendMail = async (mail) => {
      const deleted = await call(app, "deleteEmailJsAccount", {
        method: "DELETE",
        url: `/_mock/v1/emailjs/accounts/${publicKey}`,
      });
      expect(deleted.response.statusCode).toBe(204);
      return sendMail(mail);
    };
    try {
      const { response } = await sendEmail(app, send(publicKey));
      expectText(response, 400, texts.publicKeyInvalid);
    } finally {
      emulator.sendMail = sendMail;
    }
    expect(await mailOf(app, publicKey)).toEqual([]);
  });
});

describe("the rate limit", () => {
  it("allows one send per second by default, then 429, until the account's clock moves on", async () => {
    const { publicKey } = await newAccount(app, { rateLimitPerSecond: undefined });
    expect(
      (await call(app, "getEmailJsAccount", { method: "GET", url: `/_mock/v1/emailjs/accounts/${publicKey}` })).body
        .rateLimitPerSecond,
    ).toBe(1);
    expectText((await sendEmail(app, send(publicKey))).response, 200, "OK");
    expectText((await sendEmail(app, send(publicKey))).response, 429, texts.rateLimited);
    await call(app, "advanceEmailJsClock", {
      method: "POST",
      url: `/_mock/v1/emailjs/accounts/${publicKey}/clock`,
      payload: { advanceBy: 1 },
    });
    expectText((await sendEmail(app, send(publicKey))).response, 200, "OK");
    expect(await mailOf(app, publicKey)).toHaveLength(2);
  });

  it("forgets sends the account's clock is put back behind", async () => {
    const { publicKey } = await newAccount(app, { rateLimitPerSecond: 1 });
    const clock = `/_mock/v1/emailjs/accounts/${publicKey}/clock`;
    await call(app, "advanceEmailJsClock", { method: "POST", url: clock, payload: { advanceBy: 24 * 3600 } });
    expectText((await sendEmail(app, send(publicKey))).response, 200, "OK");
    await call(app, "resetEmailJsClock", { method: "DELETE", url: clock });
    expectText((await sendEmail(app, send(publicKey))).response, 200, "OK");
    expectText((await sendEmail(app, send(publicKey))).response, 429, texts.rateLimited);
  });

  it("starts afresh for an account made again with the public key of one deleted", async () => {
    const make = () => newAccount(app, { publicKey: "again-key", rateLimitPerSecond: 0.1 });
    await make();
    expectText((await sendEmail(app, send("again-key"))).response, 200, "OK");
    expectText((await sendEmail(app, send("again-key"))).response, 429, texts.rateLimited);
    await call(app, "deleteEmailJsAccount", { method: "DELETE", url: "/_mock/v1/emailjs/accounts/again-key" });
    await make();
    expectText((await sendEmail(app, send("again-key"))).response, 200, "OK");
  });

  it.runIf(testStore() === "postgres")("holds for the account across the instances of one database", async () => {
    const other = await testApp({
      databaseUrl: app.emulator.options.databaseUrl!,
      signingSecret: app.emulator.signingSecret,
    });
    try {
      // One send in ten seconds: the second comes well within the window, however slow the host.
      const { publicKey } = await newAccount(app, { rateLimitPerSecond: 0.1 });
      expectText((await sendEmail(app, send(publicKey))).response, 200, "OK");
      expectText((await sendEmail(other, send(publicKey))).response, 429, texts.rateLimited);
    } finally {
      await other.close();
    }
  });

  it("is configurable per account, and 0 turns it off", async () => {
    const three = await newAccount(app, { rateLimitPerSecond: 3 });
    for (let i = 0; i < 3; i++) expectText((await sendEmail(app, send(three.publicKey))).response, 200, "OK");
    expectText((await sendEmail(app, send(three.publicKey))).response, 429, texts.rateLimited);
    const off = await newAccount(app, { rateLimitPerSecond: 0 });
    for (let i = 0; i < 20; i++) expectText((await sendEmail(app, send(off.publicKey))).response, 200, "OK");
  });

  it("counts only sends that would be accepted, per account", async () => {
    const a = await newAccount(app, { rateLimitPerSecond: 1 });
    const b = await newAccount(app, { rateLimitPerSecond: 1 });
    expectText(
      (await sendEmail(app, send(a.publicKey, { template_id: "nope" }))).response,
      400,
      texts.templateNotFound,
    );
    expectText((await sendEmail(app, send(a.publicKey))).response, 200, "OK");
    // Another account has its own limit.
    expectText((await sendEmail(app, send(b.publicKey))).response, 200, "OK");
  });
});

describe("CORS", () => {
  it("answers the browser's preflight for send and puts Access-Control-Allow-Origin on errors too", async () => {
    const preflight = await app.inject({
      method: "OPTIONS",
      url: "/api/v1.0/email/send",
      headers: {
        ...browser,
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type",
      },
    });
    expect(preflight.statusCode).toBe(204);
    expect(preflight.headers["access-control-allow-origin"]).toBe("*");
    expect(String(preflight.headers["access-control-allow-methods"])).toContain("POST");
    const { response } = await sendEmail(app, send("no-such-key"));
    expect(response.headers["access-control-allow-origin"]).toBe("*");
  });
});
