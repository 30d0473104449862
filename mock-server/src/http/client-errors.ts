/**
 * The answer to a request Node's HTTP parser could not read (a head past the size limit, a
 * malformed line, a request that did not arrive in time): Fastify's own JSON bodies, written as
 * Node itself writes these answers — with `Connection: close`, and only when no reply of an
 * earlier request on the connection has started — then the connection closed.
 *
 * Fastify's default handler leaves the header out: a keep-alive client or proxy then keeps the
 * connection for its next request, which fails when the close arrives (nginx answers such a POST,
 * maybe another user's, 502).
 */
import { STATUS_CODES } from "node:http";
import type { Socket } from "node:net";

const answers: Record<string, [status: number, message: string]> = {
  HPE_HEADER_OVERFLOW: [431, "Exceeded maximum allowed HTTP header size"],
  ERR_HTTP_REQUEST_TIMEOUT: [408, "Client Timeout"],
};

/** The reply under way on a connection, as Node's HTTP server tracks it. */
type ServerSocket = Socket & { _httpMessage?: { headersSent?: boolean } | null };

export function clientErrorHandler(error: Error & { code?: string }, socket: Socket): void {
  // A reset connection is gone already: nothing to answer.
  if (error.code === "ECONNRESET" || socket.destroyed) return;
  const reply = (socket as ServerSocket)._httpMessage;
  if (socket.writable && !reply?.headersSent) {
    const [status, message] = answers[error.code ?? ""] ?? [400, "Client Error"];
    const body = JSON.stringify({ error: STATUS_CODES[status], message, statusCode: status });
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nConnection: close\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}
