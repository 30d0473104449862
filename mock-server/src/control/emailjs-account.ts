/** Shared by the EmailJS account routes: the account a path names, and fault requests it accepts. */
import type { FastifyRequest } from "fastify";
import { controlErrors } from "../errors/catalogue.ts";
import { operationIdsOf } from "../openapi/operations.ts";
import type { EmailJsAccount } from "../runtime/emailjs-accounts.ts";
import type { FaultRequest } from "../state/faults.ts";

/** The account named by the `publicKey` path parameter, or the control API's 404. */
export async function accountOf(request: FastifyRequest): Promise<EmailJsAccount> {
  const publicKey = (request.params as { publicKey: string }).publicKey;
  const account = await request.server.emulator.emailjs.get(publicKey);
  if (!account) throw noSuchAccount(publicKey);
  return account;
}

export const noSuchAccount = (publicKey: string) =>
  controlErrors.notFound(`no EmailJS account with public key '${publicKey}'`);

/**
 * A fault must name an operation of the service it is added to (a typo would never fire), and only
 * a fault of `callFunction` can name a function (no other call has one).
 */
export function checkFaultOperation(fault: FaultRequest, document: "app-services" | "emailjs"): void {
  const known = operationIdsOf(document);
  if (!known.includes(fault.operationId)) {
    throw controlErrors.validation(
      `'${fault.operationId}' is not an operation of the ${document === "emailjs" ? "EmailJS" : "App Services"} API; use one of: ${known.join(", ")}`,
    );
  }
  if (fault.functionName !== undefined && fault.operationId !== "callFunction") {
    throw controlErrors.validation(
      `functionName is for faults of callFunction only (the function or mongodb-atlas action called), not of ${fault.operationId}`,
    );
  }
}
