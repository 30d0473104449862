/**
 * What both EmailJS operations do once their request is read: find the account by its public key,
 * fire a fault override if one is set, check the caller (browser, private key), the service, the
 * template and the size of the variables, render the template, check the recipients, apply the rate
 * limit, and capture the e-mail in the outbox. Every rejection is a catalogue error (plain text).
 */

import type { FastifyReply, FastifyRequest } from "fastify";
import { emailJsErrors as errors } from "../errors/catalogue.ts";
import type { ControlSchemas } from "../openapi/types.ts";
import type { EmailJsAccount } from "../runtime/emailjs-accounts.ts";
import { countersOf } from "../state/rate-counters.ts";
import type { EmailJsOperationId } from "./route.ts";
import { checkRecipients, renderTemplate } from "./template.ts";
import { jsonBytesOver } from "./variables-size.ts";

type Attachment = ControlSchemas["MailMessage"]["attachments"][number];

export interface SendInput {
  userId: string | undefined;
  serviceId: string | undefined;
  templateId: string | undefined;
  accessToken: string | undefined;
  /** The template variables. */
  params: Record<string, unknown>;
  attachments: Attachment[];
  /** A form's value or file was past its limit as it was read (send-form.ts): the variables are too large. */
  tooLarge?: boolean;
  /** The request as the journal shows it (redacted when written). */
  journalBody: unknown;
}

/** The service's limit on the template variables: "50Kb", taken as 50 × 1024 bytes of JSON. */
export const variablesLimitBytes = 50 * 1024;

const sendText = (reply: FastifyReply, status: number, text: string) =>
  reply.code(status).type("text/plain; charset=utf-8").send(text);

async function applyFault(
  request: FastifyRequest,
  reply: FastifyReply,
  account: EmailJsAccount,
  operationId: EmailJsOperationId,
): Promise<boolean> {
  const fault = account.faults.take(operationId);
  if (!fault) return false;
  request.server.emulator.events.emit({ type: "fault", account: account.publicKey, action: "fired", id: fault.id });
  if (fault.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, fault.delayMs));
  if (fault.status === undefined) return false;
  request.faulted = true;
  if (fault.status === 204 || fault.status === 304) {
    await reply.code(fault.status).send();
    return true;
  }
  const body =
    typeof fault.body === "string"
      ? fault.body
      : fault.body === undefined
        ? fault.status < 300
          ? "OK"
          : `fault injected for ${operationId}`
        : JSON.stringify(fault.body);
  await sendText(reply, fault.status, body);
  return true;
}

export async function deliver(
  request: FastifyRequest,
  reply: FastifyReply,
  operationId: EmailJsOperationId,
  input: SendInput,
): Promise<FastifyReply> {
  const { emulator } = request.server;
  if (input.userId === undefined || input.userId === "") throw errors.userIdRequired();
  const account = await emulator.emailjs.get(input.userId);
  if (!account) throw errors.publicKeyInvalid();
  request.emailJs = { account, body: input.journalBody };

  if (await applyFault(request, reply, account, operationId)) return reply;

  // A browser always sends Origin on these cross-origin POSTs; server-side callers send none.
  if (request.headers.origin === undefined && !account.state.allowNonBrowser) throw errors.nonBrowser();
  const privateKey = account.checkPrivateKey(input.accessToken);
  if (privateKey === "missing") throw errors.privateKeyRequired();
  if (privateKey === "invalid") throw errors.privateKeyInvalid();

  if (input.serviceId === undefined || input.serviceId === "") throw errors.serviceIdRequired();
  if (!account.service(input.serviceId)) throw errors.serviceNotFound();
  if (input.templateId === undefined || input.templateId === "") throw errors.templateIdRequired();
  const template = account.template(input.templateId);
  if (!template) throw errors.templateNotFound();
  // A form's files' bytes are not kept, so they do not count; their field names, file names and
  // types are kept with the message, and count with the variables (fifty parts each named with
  // 78 KB stored 4 MB a send where the variables may hold 50 KB).
  const described = attachmentsBytes(input.attachments);
  if (
    input.tooLarge === true ||
    described > variablesLimitBytes ||
    jsonBytesOver(input.params, variablesLimitBytes - described)
  )
    throw errors.variablesTooLarge();

  const text = (source: string | undefined) => renderTemplate(source ?? "", input.params, "text");
  const to = text(template.to).trim();
  const recipients = checkRecipients(to);
  if (recipients === "empty") throw errors.recipientsEmpty();
  if (recipients === "corrupted") throw errors.recipientsCorrupted();
  // Only sends that would be accepted count against the limit (see docs/decisions/0003).
  if (!(await account.takeRateLimit(countersOf(emulator.store), emulator.options.production)))
    throw errors.rateLimited();

  const fromName = text(template.fromName).trim();
  const replyTo = text(template.replyTo).trim();
  const sent = await emulator.sendMail({
    source: "emailjs",
    account: account.publicKey,
    kind: template.id,
    to,
    from: text(template.from).trim(),
    ...(fromName !== "" ? { fromName } : {}),
    ...(replyTo !== "" ? { replyTo } : {}),
    subject: text(template.subject),
    html: renderTemplate(template.html ?? "", input.params, "html"),
    text: text(template.text),
    templateParams: structuredClone(input.params),
    attachments: input.attachments,
    createdAtMs: account.clock.now(),
  });
  // The account deleted while the send ran: refused as a send a moment later is.
  if (!sent) throw errors.publicKeyInvalid();
  return sendText(reply, 200, "OK");
}

/** The bytes of what a message keeps of a form's file parts: their field names, file names and types. */
function attachmentsBytes(attachments: Attachment[]): number {
  let bytes = 0;
  for (const { field, filename, contentType } of attachments)
    bytes += Buffer.byteLength(field) + Buffer.byteLength(filename) + Buffer.byteLength(contentType ?? "");
  return bytes;
}
