/**
 * `emailjs.sendForm(serviceId, templateId, form)`: multipart/form-data whose own fields are the
 * template variables, followed by the SDK's `lib_version`, `service_id`, `template_id` and
 * `user_id`. File parts become attachments (name, type and size are recorded; the bytes are not kept).
 */
import type { IncomingMessage } from "node:http";
import Busboy from "@fastify/busboy";
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

type Form = Pick<SendInput, "params" | "attachments" | "tooLarge"> & { sdk: Map<string, string> };

/**
 * The multipart parser (@fastify/busboy 3.2.6) stops for good when a part it skips (one without
 * `Content-Disposition: form-data`) brings 16 KB or more in one piece: the request would wait
 * forever (found by the fuzzer). A form whose body has all arrived, or is held back by the parser,
 * and that yields nothing more for a second is malformed. (Wall-clock time on purpose: this guards
 * the transport, like a socket timeout, not the emulated service's clock.)
 */
const stallMs = 1000;

function stallGuard(raw: IncomingMessage, stall: (error: Error) => void) {
  let bytes = raw.socket?.bytesRead ?? 0;
  let quietSince = Date.now();
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
    /** The parser read something. */
    progress: () => {
      quietSince = Date.now();
    },
    stop: () => clearInterval(timer),
  };
}

/** A template variable's value set as the form's field gives it: an own property, whatever its name. */
function setParam(params: Record<string, unknown>, name: string, value: string): void {
  const previous = Object.hasOwn(params, name) ? params[name] : undefined;
  // A repeated name (a group of checkboxes) becomes a list; `{{name}}` shows it comma-separated.
  const next = previous === undefined ? value : Array.isArray(previous) ? [...previous, value] : [previous, value];
  Object.defineProperty(params, name, { value: next, writable: true, enumerable: true, configurable: true });
}

/**
 * The form, read from the request with busboy: its fields are the template's variables whatever
 * their names (`constructor` and `toString` too: the multipart plugin refused a name
 * `Object.prototype` has), a part without a name is nothing, and a field's text is kept as sent
 * (the plugin parsed one typed `application/json`). A value or file past its limit marks the form
 * too large and the rest is read on, so that the checks answer in their order (the public key is
 * among the SDK's fields, at the end); past the count of fields, files or parts nothing more can be
 * read, and the form is too large at once.
 */
function readForm(request: FastifyRequest): Promise<Form> {
  const contentType = request.headers["content-type"];
  if (typeof contentType !== "string" || !/^multipart\/form-data\b/i.test(contentType)) throw errors.malformed();
  let parser: InstanceType<typeof Busboy>;
  try {
    parser = new Busboy({ headers: request.headers as { "content-type": string }, limits });
  } catch {
    // (No boundary, or a type busboy does not read.)
    throw errors.malformed();
  }
  const params: Record<string, unknown> = {};
  const sdk = new Map<string, string>();
  const attachments: SendInput["attachments"] = [];
  let tooLarge = false;
  let countExceeded = false;
  return new Promise<Form>((resolve, reject) => {
    let files = 0;
    let finished = false;
    const settle = (error: Error | null) => {
      guard.stop();
      if (error !== null) {
        request.raw.unpipe(parser);
        request.raw.resume();
        reject(error instanceof EmailJsError ? error : errors.malformed());
      } else if (countExceeded) reject(errors.variablesTooLarge());
      else resolve({ params, attachments, sdk, tooLarge });
    };
    const guard = stallGuard(request.raw, (error) => settle(error));
    const done = () => {
      if (finished && files === 0) settle(null);
    };
    parser.on("field", (name: string | undefined, value: string, nameTruncated: boolean, valueTruncated: boolean) => {
      guard.progress();
      if (nameTruncated || valueTruncated) tooLarge = true;
      if (name === undefined || name === "") return;
      if (sdkFields.has(name)) {
        // The SDK appends its fields after the form's: the last value is the SDK's.
        sdk.set(name, value);
        return;
      }
      setParam(params, name, value);
    });
    parser.on(
      "file",
      (
        name: string | undefined,
        stream: NodeJS.ReadableStream,
        filename: string | undefined,
        _encoding: string,
        mimetype: string,
      ) => {
        files += 1;
        let size = 0;
        stream.on("data", (chunk: Buffer) => {
          guard.progress();
          size += chunk.length;
        });
        stream.on("limit", () => {
          tooLarge = true;
        });
        stream.on("end", () => {
          files -= 1;
          // An empty file input still sends a part (no name, no bytes): nothing was attached; and a
          // part without a field name is nothing. (Busboy gives no filename for an octet-stream part
          // sent without one.)
          if (name !== undefined && name !== "" && !(size === 0 && !filename))
            attachments.push({ field: name, filename: filename ?? "", contentType: mimetype, size });
          done();
        });
        stream.on("error", (error: Error) => settle(error));
      },
    );
    for (const limit of ["partsLimit", "filesLimit", "fieldsLimit"]) parser.on(limit, () => (countExceeded = true));
    parser.on("error", (error: Error) => settle(error));
    parser.on("finish", () => {
      finished = true;
      done();
    });
    request.raw.on("error", (error: Error) => settle(error));
    request.raw.pipe(parser);
  });
}

export default defineEmailJsRoute("sendForm", async (request, reply) => {
  const { params, attachments, sdk, tooLarge } = await readForm(request);
  return deliver(request, reply, "sendForm", {
    userId: sdk.get("user_id"),
    serviceId: sdk.get("service_id"),
    templateId: sdk.get("template_id"),
    accessToken: sdk.get("accessToken"),
    params,
    attachments,
    tooLarge,
    journalBody: { ...Object.fromEntries(sdk), ...params, ...(attachments.length > 0 ? { attachments } : {}) },
  });
});
