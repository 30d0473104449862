/**
 * How an EmailJS route file declares itself: an operationId of the EmailJS document and a handler
 * typed by the generated operation types. Replies are plain text, like the real service's.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import type { EmailJsOperations, RouteTypes } from "../openapi/types.ts";
import type { EmailJsAccount } from "../runtime/emailjs-accounts.ts";

export type EmailJsOperationId = keyof EmailJsOperations;
export type EmailJsRequest<K extends EmailJsOperationId> = FastifyRequest<RouteTypes<EmailJsOperations[K]>>;

export interface EmailJsRoute<K extends EmailJsOperationId = EmailJsOperationId> {
  operationId: K;
  handler: (request: EmailJsRequest<K>, reply: FastifyReply) => Promise<unknown>;
}

export function defineEmailJsRoute<K extends EmailJsOperationId>(
  operationId: K,
  handler: EmailJsRoute<K>["handler"],
): EmailJsRoute<K> {
  return { operationId, handler };
}

/** What an EmailJS request turned out to be, once its account is known (for the account's journal). */
export interface EmailJsRequestContext {
  account: EmailJsAccount;
  /** The request as the journal shows it (redacted when written). */
  body: unknown;
}

declare module "fastify" {
  interface FastifyRequest {
    /** Set by the EmailJS routes once the public key names an account. */
    emailJs: EmailJsRequestContext | null;
  }
}
