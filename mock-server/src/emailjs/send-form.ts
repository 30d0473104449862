/**
 * `emailjs.sendForm(serviceId, templateId, form)`: multipart/form-data whose own fields are the
 * template variables, followed by the SDK's `lib_version`, `service_id`, `template_id` and
 * `user_id`. File parts become attachments (name, type and size are recorded; the bytes are not kept).
 */
import type { IncomingMessage } from "node:http";
import type { FastifyRequest } from "fastify";
import { EmailJsError, emailJsErrors as errors } from "../errors/catalogue.ts";
import { deliver, type SendInput, variablesLimitBytes } from "./deliver.ts";
import { defineEmailJsRoute } from "./route.ts";

/** Fields the SDK (or a REST caller) adds; they are not template variables. */
const sdkFields = new Set(["lib_version", "service_id", "template_id", "user_id", "accessToken"]);

const limits = {
  // A longer value could never pass the variables limit; busboy truncates it and we answer 413.
  fieldSize: variablesLimitBytes + 1,
  fields: 1000,
  files: 50,
  // The hosted service's attachment limits depend on the plan; files are counted, not kept.
  fileSize: 18 * 1024 * 1024,
  parts: 1050,
};

type Form = Pick<SendInput, "params" | "attachments"> & { sdk: Map<string, string> };

/**
 * The multipart parser (@fastify/busboy 3.2.6) stops for good when a part it skips (one without
 * `Content-Disposition: form-data`) brings 16 KB or more in one piece: the request would wait
 * forever (found by the fuzzer). A form whose body has all arrived, or is held back by the parser,
 * and that yields nothing more for a second is malformed. (Wall-clock time on purpose: this guards
 * the transport, like a socket timeout, not the emulated service's clock.)
 */
const stallMs = 1000;

function stallGuard(raw: IncomingMessage) {
  let bytes = raw.socket?.bytesRead ?? 0;
  let quietSince = Date.now();
  let stall: (error: Error) => void = () => {};
  const stalled = new Promise<never>((_resolve, reject) => {
    stall = reject;
  });
  stalled.catch(() => {});
  const timer = setInterval(() => {
    const read = raw.socket?.bytesRead ?? bytes;
    const heldBack = raw.complete || raw.readableFlowing === false;
    if (read !== bytes || !heldBack) {
      bytes = read;
      quietSince = Date.now();
    } else if (Date.now() - quietSince >= stallMs) stall(errors.malformed());
  }, stallMs / 4);
  timer.unref();
  return {
    /** The next step of the parser, or the stall. */
    next<T>(step: Promise<T>): Promise<T> {
      return Promise.race([step, stalled]).then((value) => {
        quietSince = Date.now();
        return value;
      });
    },
    stop: () => clearInterval(timer),
  };
}

async function readForm(request: FastifyRequest): Promise<Form> {
  if (!request.isMultipart()) throw errors.malformed();
  const params: Record<string, unknown> = {};
  const sdk = new Map<string, string>();
  const attachments: SendInput["attachments"] = [];
  const guard = stallGuard(request.raw);
  const parts = request.parts({ limits })[Symbol.asyncIterator]();
  try {
    for (;;) {
      const next = await guard.next(parts.next());
      if (next.done) break;
      const part = next.value;
      if (part.type === "file") {
        let size = 0;
        const chunks = part.file[Symbol.asyncIterator]();
        for (;;) {
          const chunk = await guard.next(chunks.next());
          if (chunk.done) break;
          size += (chunk.value as Buffer).length;
        }
        if (part.file.truncated) throw errors.variablesTooLarge();
        // Busboy gives no filename for an octet-stream part sent without one.
        const filename = part.filename ?? "";
        // An empty file input still sends a part (no name, no bytes): nothing was attached.
        if (filename === "" && size === 0) continue;
        attachments.push({ field: part.fieldname, filename, contentType: part.mimetype, size });
        continue;
      }
      if (part.valueTruncated || part.fieldnameTruncated) throw errors.variablesTooLarge();
      const value = typeof part.value === "string" ? part.value : String(part.value);
      if (sdkFields.has(part.fieldname)) {
        // The SDK appends its fields after the form's: the last value is the SDK's.
        sdk.set(part.fieldname, value);
        continue;
      }
      const previous = params[part.fieldname];
      // A repeated name (a group of checkboxes) becomes a list; `{{name}}` shows it comma-separated.
      if (previous === undefined) params[part.fieldname] = value;
      else params[part.fieldname] = Array.isArray(previous) ? [...previous, value] : [previous, value];
    }
  } catch (error) {
    if (error instanceof EmailJsError) throw error;
    // The multipart plugin's limit errors are 413; anything else is a malformed body.
    if ((error as { statusCode?: number }).statusCode === 413) throw errors.variablesTooLarge();
    throw errors.malformed();
  } finally {
    guard.stop();
  }
  return { params, attachments, sdk };
}

export default defineEmailJsRoute("sendForm", async (request, reply) => {
  const { params, attachments, sdk } = await readForm(request);
  return deliver(request, reply, "sendForm", {
    userId: sdk.get("user_id"),
    serviceId: sdk.get("service_id"),
    templateId: sdk.get("template_id"),
    accessToken: sdk.get("accessToken"),
    params,
    attachments,
    journalBody: { ...Object.fromEntries(sdk), ...params, ...(attachments.length > 0 ? { attachments } : {}) },
  });
});
