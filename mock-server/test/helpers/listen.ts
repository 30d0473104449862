/** A listening emulator on a free loopback port, for SDK tests and streams. */
import type { Socket } from "node:net";
import type { FastifyInstance } from "fastify";
import { testApp } from "./app.ts";

export async function listening(
  options: Parameters<typeof testApp>[0] = {},
): Promise<{ app: FastifyInstance; url: string }> {
  const app = await testApp(options);
  // Node's fetch (undici) may open a spare connection after a test aborts a stream and send nothing
  // on it; the server counts it as busy, so close() would wait ~4 s for undici to drop it. On close,
  // connections that never carried a request go at once (those that did are left to the emulator).
  const unused = new Set<Socket>();
  app.server.on("connection", (socket: Socket) => {
    unused.add(socket);
    socket.once("close", () => unused.delete(socket));
  });
  app.server.on("request", (request: { socket: Socket }) => unused.delete(request.socket));
  app.addHook("preClose", async () => {
    for (const socket of unused) socket.destroy();
  });
  await app.listen({ host: "127.0.0.1", port: 0 });
  const address = app.server.address();
  if (address === null || typeof address !== "object") throw new Error("not listening");
  return { app, url: `http://127.0.0.1:${address.port}` };
}
