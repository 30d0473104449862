/**
 * The official EmailJS SDK, loaded only by the pages that send mail, and configured once with
 * `init({ publicKey, origin })` (the origin is how it reaches the emulator locally; nothing else
 * changes the origin of `send`/`sendForm`).
 */
import { config } from "../config/env.ts";
import { EmailSendError } from "./errors/service-errors.ts";

type EmailJs = typeof import("@emailjs/browser");

let sdk: Promise<EmailJs> | null = null;

export function loadEmailJs(): Promise<EmailJs> {
  sdk ??= import("@emailjs/browser").then(
    (module) => {
      module.init({ publicKey: config.emailJsPublicKey, origin: config.emailJsOrigin });
      return module;
    },
    (error: unknown) => {
      sdk = null;
      throw error;
    },
  );
  return sdk;
}

/**
 * The SDK rejects with an `EmailJSResponseStatus` ({status, text}) for replies, with a plain string
 * for its own checks, and with the runtime's TypeError when the request never got through.
 */
export function toEmailSendError(reason: unknown): unknown {
  if (typeof reason === "string") return new EmailSendError(0, reason);
  if (typeof reason === "object" && reason !== null && "status" in reason && "text" in reason) {
    const { status, text } = reason as { status: unknown; text: unknown };
    return new EmailSendError(typeof status === "number" ? status : 0, typeof text === "string" ? text : "");
  }
  return reason;
}
