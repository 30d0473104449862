/**
 * Contract checks for tests: every reply is validated against the OpenAPI document of its
 * operation (status documented, content type, body schema), so the emulator cannot drift. The
 * rules themselves are in contract-rules.ts (shared with the fuzzer).
 */

import type { LightMyRequestResponse } from "fastify";
import { expect } from "vitest";
import { contractProblem } from "./contract-rules.ts";

/**
 * Asserts that a reply is one the document allows for this operation, and returns its JSON body
 * (or text for non-JSON replies, or undefined for empty ones).
 */
export function expectContract(operationId: string, response: LightMyRequestResponse): unknown {
  const reply = { status: response.statusCode, headers: response.headers, body: response.body };
  const problem = contractProblem(operationId, reply);
  expect(problem, problem ?? undefined).toBeNull();
  if (response.body === "") return undefined;
  const type = String(response.headers["content-type"]).split(";")[0]!.trim();
  return type === "application/json" ? JSON.parse(response.body) : response.body;
}
