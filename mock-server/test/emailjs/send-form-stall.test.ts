/**
 * Regression (found by the fuzzer): a multipart part without `Content-Disposition` carrying 16 KB or
 * more in one piece stopped the multipart parser for good, and the request was never answered. It
 * is now a malformed form (400) within about a second, and the connection keeps working.
 */
import { Agent, request } from "node:http";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectTextContract } from "../helpers/fetch-contract.ts";
import { listening } from "../helpers/listen.ts";

let app: FastifyInstance;
let url: string;
const agent = new Agent({ keepAlive: true, maxSockets: 1 });
beforeAll(async () => {
  ({ app, url } = await listening());
});
afterAll(async () => {
  agent.destroy();
  await app.close();
});

const boundary = "----stall";

function form(parts: { headers: string[]; value: string }[]): Buffer {
  let text = "";
  for (const part of parts)
    text += `--${boundary}\r\n${part.headers.map((h) => `${h}\r\n`).join("")}\r\n${part.value}\r\n`;
  return Buffer.from(`${text}--${boundary}--\r\n`);
}

/** Posts a form over one kept-alive connection; fails after 10 s rather than waiting forever. */
function post(body: Buffer): Promise<{ status: number; text: string; headers: Record<string, string> }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/api/v1.0/email/send-form`,
      {
        agent,
        method: "POST",
        headers: {
          "content-type": `multipart/form-data; boundary=${boundary}`,
          "content-length": body.length,
          origin: "http://127.0.0.1:5173",
        },
      },
      (res) => {
        let text = "";
        res.on("data", (chunk) => {
          text += chunk;
        });
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, text, headers: res.headers as Record<string, string> }),
        );
      },
    );
    req.setTimeout(10_000, () => req.destroy(new Error("no answer within 10 s")));
    req.on("error", reject);
    req.end(body);
  });
}

const check = (reply: { status: number; text: string; headers: Record<string, string> }) =>
  expectTextContract("sendForm", { status: reply.status, headers: new Headers(reply.headers) } as Response, reply.text);

describe("a multipart part the parser skips", () => {
  it.each([17_000, 40_000, 90_000])("answers 400 for a %i-byte part without Content-Disposition", async (size) => {
    const reply = await post(
      form([
        { headers: [], value: "local-public-key" },
        { headers: [], value: "x".repeat(size) },
      ]),
    );
    expect(reply.status).toBe(400);
    expect(reply.text).toBe("The request body is invalid");
    check(reply);
  });

  it("also for a Content-Disposition other than form-data, and the connection still serves a good form", async () => {
    const skipped = await post(
      form([{ headers: ['Content-Disposition: attachment; name="a"'], value: "v".repeat(20_000) }]),
    );
    expect(skipped.status).toBe(400);
    const good = await post(
      form([
        { headers: ['Content-Disposition: form-data; name="to_email"'], value: "ada@example.com" },
        { headers: ['Content-Disposition: form-data; name="message"'], value: "y".repeat(20_000) },
        { headers: ['Content-Disposition: form-data; name="service_id"'], value: "local_service" },
        { headers: ['Content-Disposition: form-data; name="template_id"'], value: "local_template" },
        { headers: ['Content-Disposition: form-data; name="user_id"'], value: "local-public-key" },
      ]),
    );
    expect(good.status, good.text).toBe(200);
    check(good);
  });
});
