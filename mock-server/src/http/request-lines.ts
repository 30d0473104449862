/**
 * Fastify's own request lines ("incoming request", "request completed") are written at `info`.
 * Below that level (the default, `warn`) they are never written, yet Fastify builds each line's
 * objects and reads the reply's elapsed time on every request first; this controller leaves them
 * out then, and keeps the line of a request that failed (at `error`).
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import { LogController } from "fastify";

export class ErrorsOnlyRequestLines extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
    metadata?: Record<string, unknown>,
  ): void {
    if (error) super.requestCompleted(error, request, reply, metadata);
  }
}

/** The log controller for a server logging at `level`: Fastify's own when it writes `info` lines. */
export function requestLinesAt(level: string): LogController | undefined {
  return level === "info" || level === "debug" || level === "trace" ? undefined : new ErrorsOnlyRequestLines();
}
