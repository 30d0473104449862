import type { MailMessage } from "../store/store.ts";
import { defineControlRoute } from "./route.ts";

/**
 * Captured mail: the newest `limit` matches, oldest first, and how many match (counted only when
 * the page is full). With `wait`, the request is held until a matching message arrives (answered
 * at once) or the time is up (no messages); a client that goes away ends the wait.
 */
export default defineControlRoute("listMail", async (request, reply) => {
  const { mail } = request.server.emulator.store;
  // (The validator fills in the document's default `limit`, 1,000; the type keeps it optional.)
  const { wait, to, appId, account, source, kind, since, search, limit = 1000 } = request.query;
  const filter = { to, appId, account, source, kind, since, search };
  const page = async (messages: MailMessage[]) => ({
    messages,
    total: messages.length < limit ? messages.length : await mail.count(filter),
  });
  if (!wait) return page(await mail.list(filter, limit));
  // Read (and drop) any body a GET carried: a connection with unread data is not read further, so
  // the client's leaving would go unnoticed until the wait ran out.
  request.raw.resume();
  const gone = new AbortController();
  const onClose = () => gone.abort();
  // The response (not the request, which closes once its body is read) tells when the client left.
  reply.raw.once("close", onClose);
  const messages = await mail.wait(filter, wait, gone.signal);
  reply.raw.off("close", onClose);
  if (gone.signal.aborted) {
    // Nobody to answer: leave the closed connection alone.
    reply.hijack();
    return reply;
  }
  return page(messages.slice(-limit));
});
