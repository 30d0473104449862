/** The contract check for replies read with fetch (listening emulator): same rules as `expectContract`. */
import type { LightMyRequestResponse } from "fastify";
import { expectContract } from "./contract.ts";

/** Checks a complete reply (read from a clone, so the caller can still read the body). */
export async function expectFetchContract(operationId: string, response: Response): Promise<unknown> {
  return expectTextContract(operationId, response, await response.clone().text());
}

/** Checks a reply whose body the caller read itself (a stream, read in part). */
export function expectTextContract(operationId: string, response: Response, body: string): unknown {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  return expectContract(operationId, {
    statusCode: response.status,
    headers,
    body,
  } as unknown as LightMyRequestResponse);
}
