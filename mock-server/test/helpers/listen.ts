/** A listening emulator on a free loopback port, for SDK tests and streams. */
import type { FastifyInstance } from "fastify";
import { testApp } from "./app.ts";

export async function listening(
  options: Parameters<typeof testApp>[0] = {},
): Promise<{ app: FastifyInstance; url: string }> {
  const app = await testApp(options);
  await app.listen({ host: "127.0.0.1", port: 0 });
  const address = app.server.address();
  if (address === null || typeof address !== "object") throw new Error("not listening");
  return { app, url: `http://127.0.0.1:${address.port}` };
}
