/**
 * What the App Services and EmailJS plugins journal of a finished request (state/journal.ts keeps
 * it): the request as asked, secrets redacted, the reply as sent. On every request's path, so it
 * does the least it can: a small JSON body that names no secret is kept as its text, the reply as
 * it was sent and the time as a number, all read when someone lists the journal.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import { type Journal, type JournalEntry, journalBody, keptAsText, redactUrl } from "../state/journal.ts";

/**
 * Journals the request: `body` is what to show of its body (the parsed request body, or what the
 * operation made of it), `nowMs` the namespace's clock now.
 */
export function journalRequest(
  journal: Journal,
  request: FastifyRequest,
  reply: FastifyReply,
  operationId: string,
  body: unknown,
  nowMs: number,
): void {
  const elapsed = reply.elapsedTime;
  const durationMs = Math.round(elapsed * 100) / 100;
  const path = redactUrl(request.originalUrl);
  const sent = request.sentPayload ?? undefined;
  let bodyText: string | undefined;
  if (body !== undefined) {
    const contentLength = request.headers["content-length"];
    // The JSON text of the request body, when that is what is shown.
    const text = body === request.body ? request.jsonText : null;
    if (text !== null && keptAsText(text, contentLength)) bodyText = text;
    else {
      // A body redacted now: the entry holds its copy.
      const entry: JournalEntry = {
        id: request.id,
        time: "", // written from the time given to `add` when the journal is read
        method: request.method,
        path,
        operationId,
        status: reply.statusCode,
        durationMs,
        faulted: request.faulted,
        requestBody: journalBody(body, contentLength),
      };
      journal.add(entry, sent, nowMs - elapsed);
      return;
    }
  }
  journal.record(
    request.id,
    request.method,
    path,
    operationId,
    reply.statusCode,
    durationMs,
    request.faulted,
    nowMs - elapsed,
    bodyText,
    sent,
  );
}
