/**
 * A request no route takes is answered 404 before its body is read, and its connection closed: a
 * body sent there took no place of the budgets the routes' bodies take and had no stall cut, so
 * sixty 17 MB bodies to a path that did not exist held a gigabyte, for minutes.
 */
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listening } from "../helpers/listen.ts";

let server: Awaited<ReturnType<typeof listening>>;
beforeAll(async () => {
  server = await listening();
});
afterAll(() => server.app.close());

/** Sends a request line, headers and the start of a large body, then stalls; what comes back, once the server closes. */
function stalledBody(path: string): Promise<string> {
  const { port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), "127.0.0.1");
    let received = "";
    socket.on("data", (chunk) => {
      received += chunk.toString();
    });
    socket.on("error", reject);
    socket.on("close", () => resolve(received));
    socket.write(
      `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: 17825792\r\n\r\n`,
    );
    socket.write(`{"pad":"${"x".repeat(64 * 1024)}`);
  });
}

describe("a body sent to no route", () => {
  it.each([
    ["/nonexistent", /"error_code":"NotFound"/],
    ["/api/client/v2.0/app/local-app/nothing-here", /"error_code":"NotFound"/],
    ["/_mock/v1/nothing-here", /"code":"NotFound"/],
  ])("is answered 404 before it is read, on a connection then closed (%s)", async (path, body) => {
    const answer = await stalledBody(path);
    expect(answer).toMatch(/^HTTP\/1\.1 404 /);
    expect(answer.toLowerCase()).toContain("connection: close");
    expect(answer).toMatch(body);
  });

  it("leaves a routed request's body to its route", async () => {
    const response = await fetch(`${server.url}/api/client/v2.0/app/local-app/auth/providers/anon-user/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(response.status).toBe(200);
  });
});
