/** A raw keep-alive connection (a proxy's kept upstream connection), to ask request after request on. */
import { connect } from "node:net";
import { connect as connectTls } from "node:tls";
import { expect } from "vitest";
import { until } from "./until.ts";

/**
 * Opens a connection to `url` (HTTPS with `ca`) and asks one request on it; answers how to ask more
 * and when it closed.
 */
export async function keptConnection(url: string, ca?: string) {
  const { protocol, port } = new URL(url);
  const socket =
    protocol === "https:"
      ? connectTls({ host: "127.0.0.1", port: Number(port), ca })
      : connect(Number(port), "127.0.0.1");
  await new Promise<void>((resolve) =>
    socket.once(protocol === "https:" ? "secureConnect" : "connect", () => resolve()),
  );
  socket.on("error", () => undefined);
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  let received = "";
  socket.setEncoding("utf8");
  socket.on("data", (chunk: string) => (received += chunk));
  /** Sends a request and waits for its whole reply (its length given, as this server gives it). */
  const ask = async (method: string, path: string, body = "") => {
    received = "";
    socket.write(
      `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    return until(() => {
      const end = received.indexOf("\r\n\r\n");
      const length = /\r\ncontent-length: (\d+)/i.exec(received)?.[1];
      return end >= 0 && length !== undefined && Buffer.byteLength(received.slice(end + 4)) >= Number(length)
        ? received
        : undefined;
    }, `the reply to ${method} ${path}`);
  };
  expect(await ask("GET", "/api/client/v2.0/app/local-app/location")).toMatch(/\r\nconnection: keep-alive\r\n/i);
  return { ask, closed };
}

/**
 * Closes `server` and, once it no longer listens, asks a POST on `kept`: it is answered whole,
 * saying `Connection: close`, and the connection then closes.
 */
export async function expectAnsweredWhileDraining(
  server: { close(): Promise<void>; app: { server: { listening: boolean } } },
  kept: Awaited<ReturnType<typeof keptConnection>>,
): Promise<void> {
  const closing = server.close();
  await until(() => !server.app.server.listening, "the server to stop listening");
  const reply = await kept.ask("POST", "/api/client/v2.0/app/local-app/auth/providers/anon-user/login", "{}");
  expect(reply).toMatch(/^HTTP\/1\.1 200 /);
  expect(reply).toMatch(/\r\nconnection: close\r\n/i);
  await kept.closed;
  await closing;
}
