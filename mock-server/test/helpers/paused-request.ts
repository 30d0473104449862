/** A raw HTTP request whose answer is not read until the test says so (a client that stalls). */
import { connect, type Socket } from "node:net";

export interface PausedRequest {
  socket: Socket;
  /** Bytes received so far (once reading), and whether the connection closed. */
  state: { received: number; closed: boolean };
}

/**
 * Sends `request` (its head and body, as written) to the server at `url` on a new connection that
 * reads nothing until resumed or read; `opened` collects the sockets for the test's cleanup.
 */
export async function pausedRequest(url: string, request: string, opened: Socket[]): Promise<PausedRequest> {
  const { port } = new URL(url);
  const socket = connect(Number(port), "127.0.0.1");
  opened.push(socket);
  const state = { received: 0, closed: false };
  socket.on("error", () => undefined);
  socket.on("close", () => {
    state.closed = true;
  });
  await new Promise((resolve) => socket.once("connect", resolve));
  socket.pause();
  socket.on("data", (chunk: Buffer) => {
    state.received += chunk.length;
  });
  socket.write(request);
  return { socket, state };
}
