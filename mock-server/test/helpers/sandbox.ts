/** Function processes for tests that run functions without an emulator around them. */
import { afterAll } from "vitest";
import { Sandbox, type SandboxHost } from "../../src/functions/sandbox.ts";

/** A host that answers none of a function's requests (MongoDB actions, other functions, HTTP). */
export const refusingHost: SandboxHost = {
  request: (sandbox, _callId, pendingId) => sandbox.deliver(pendingId, false, "not in this test"),
  log: () => undefined,
};

/** The app a test's function process belongs to. */
export const testAppInfo = (name: string) => ({
  app: { id: "a", clientAppId: name, name },
  values: {},
  environment: { tag: "", values: {} },
  service: "mongodb-atlas",
});

/** A function process for the file's tests, closed after them. */
export function testSandbox(name: string): Sandbox {
  const sandbox = new Sandbox(refusingHost, testAppInfo(name));
  afterAll(() => sandbox.close());
  return sandbox;
}
