/**
 * The EmailJS REST API (`/api/v1.0/email/*`). A multipart body is read by `send-form` itself.
 * Once a request's public key names an account, the account's journal records it (private keys
 * redacted) and the live events announce it. CORS is handled app-wide (any origin).
 */
import type { FastifyInstance } from "fastify";
import { controlApiServed } from "../config/options.ts";
import { emailJsErrors as errors } from "../errors/catalogue.ts";
import { journalRequest } from "../http/request-journal.ts";
import { registerDocumentedRoutes } from "../openapi/register-routes.ts";
import { routes } from "./routes.ts";

export async function emailJsPlugin(app: FastifyInstance): Promise<void> {
  const { emulator } = app;
  // A multipart body is left for send-form to read as it arrives (send-form.ts).
  app.addContentTypeParser("multipart/form-data", (_request, _payload, done) => done(null));
  app.decorateRequest("emailJs", null);

  // A body of 16 KiB or more takes a place until answered, before it is read (runtime/large-requests.ts).
  app.addHook("onRequest", (request, reply, done) => {
    if (emulator.largeRequests.hold(request.ip, request.raw, reply.raw) === null) return done();
    reply.header("retry-after", "1");
    done(errors.rateLimited());
  });
  app.addHook("preParsing", (_request, reply, payload, done) => {
    done(
      null,
      emulator.largeRequests.meter(reply.raw, payload, () => {
        reply.header("retry-after", "1");
        return errors.rateLimited();
      }),
    );
  });

  // (A callback hook, like the others on every request's path; none when nothing can read the
  // journals: production without a control token.)
  if (controlApiServed(emulator.options))
    app.addHook("onResponse", (request, reply, done) => {
      const context = request.emailJs;
      const operationId = request.routeOptions.config.operationId;
      if (!context || !operationId) return done();
      try {
        const { account, body } = context;
        journalRequest(account.journal, request, reply, operationId, body, account.clock.now());
        if (emulator.events.size > 0) {
          emulator.events.emit({
            type: "request",
            account: account.publicKey,
            action: "completed",
            id: request.id,
            detail: { operationId, status: reply.statusCode },
          });
        }
        done();
      } catch (error) {
        done(error as Error);
      }
    });

  registerDocumentedRoutes(app, routes, "emailjs");
}
