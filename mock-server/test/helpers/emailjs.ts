/** EmailJS helpers: an isolated account per test (through the control API) and send calls. */
import type { FastifyInstance } from "fastify";
import { call } from "./app.ts";

/** A browser page's Origin: the default for sends, since accounts refuse non-browser callers by default. */
export const browser = { origin: "http://127.0.0.1:5173" };

export async function newAccount(app: FastifyInstance, request: Record<string, unknown> = {}) {
  const { response, body } = await call(app, "createEmailJsAccount", {
    method: "POST",
    url: "/_mock/v1/emailjs/accounts",
    payload: { rateLimitPerSecond: 0, ...request },
  });
  if (response.statusCode !== 201) throw new Error(`cannot create an account: ${response.body}`);
  return body as { publicKey: string; privateKey?: string };
}

export function sendEmail(app: FastifyInstance, payload: unknown, headers: Record<string, string> = browser) {
  return call(app, "sendEmail", {
    method: "POST",
    url: "/api/v1.0/email/send",
    headers,
    payload: payload as Record<string, unknown>,
  });
}

/** A multipart body as a browser (or the SDK) would send it. */
export async function multipart(form: FormData): Promise<{ payload: Buffer; headers: Record<string, string> }> {
  const request = new Request("http://localhost/", { method: "POST", body: form });
  return {
    payload: Buffer.from(await request.arrayBuffer()),
    headers: { "content-type": request.headers.get("content-type")! },
  };
}

export async function sendForm(app: FastifyInstance, form: FormData, headers: Record<string, string> = browser) {
  const body = await multipart(form);
  return call(app, "sendForm", {
    method: "POST",
    url: "/api/v1.0/email/send-form",
    headers: { ...headers, ...body.headers },
    payload: body.payload,
  });
}

export async function mailOf(app: FastifyInstance, account: string) {
  const { body } = await call(app, "listMail", { method: "GET", url: `/_mock/v1/mail?account=${account}` });
  return body.messages as Record<string, unknown>[];
}
