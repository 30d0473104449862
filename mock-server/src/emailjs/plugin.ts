/**
 * The EmailJS REST API (`/api/v1.0/email/*`). Multipart parsing is registered here only, for
 * `send-form`. Once a request's public key names an account, the account's journal records it
 * (private keys redacted) and the live events announce it. CORS is handled app-wide (any origin).
 */
import multipart from "@fastify/multipart";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { registerDocumentedRoutes } from "../openapi/register-routes.ts";
import { journalBody, redactUrl } from "../state/journal.ts";
import { routes } from "./routes.ts";

export async function emailJsPlugin(app: FastifyInstance): Promise<void> {
  const { emulator } = app;
  await app.register(multipart, { throwFileSizeLimit: true });
  app.decorateRequest("emailJs", null);

  // The reply as sent, for the journal (onResponse no longer sees it).
  const replies = new WeakMap<FastifyRequest, unknown>();
  app.addHook("onSend", (request, _reply, payload, done) => {
    if (request.emailJs) replies.set(request, payload);
    done(null, payload);
  });

  app.addHook("onResponse", async (request, reply) => {
    const context = request.emailJs;
    const operationId = request.routeOptions.config.operationId;
    if (!context || !operationId) return;
    const { account, body } = context;
    account.journal.add(
      {
        id: request.id,
        time: new Date(account.clock.now() - reply.elapsedTime).toISOString(),
        method: request.method,
        path: redactUrl(request.url),
        operationId,
        status: reply.statusCode,
        durationMs: Math.round(reply.elapsedTime * 100) / 100,
        faulted: request.faulted,
        ...(body !== undefined ? { requestBody: journalBody(body, request.headers["content-length"]) } : {}),
      },
      replies.get(request),
    );
    emulator.events.emit({
      type: "request",
      account: account.publicKey,
      action: "completed",
      id: request.id,
      detail: { operationId, status: reply.statusCode },
    });
  });

  registerDocumentedRoutes(app, routes, "emailjs");
}
