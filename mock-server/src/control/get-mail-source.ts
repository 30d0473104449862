import { controlErrors } from "../errors/catalogue.ts";
import { emailSource } from "../state/smtp-relay.ts";
import { defineControlRoute } from "./route.ts";

/** The header block of an RFC 5322 message: one entry per header, folded lines joined. */
export function headersOf(source: string): { name: string; value: string }[] {
  const end = source.indexOf("\r\n\r\n");
  const block = end < 0 ? source : source.slice(0, end);
  const headers: { name: string; value: string }[] = [];
  for (const line of block.split("\r\n")) {
    const last = headers.at(-1);
    if (/^[ \t]/.test(line) && last) last.value += ` ${line.trim()}`;
    else {
      const colon = line.indexOf(":");
      if (colon > 0) headers.push({ name: line.slice(0, colon), value: line.slice(colon + 1).trim() });
    }
  }
  return headers;
}

/** A captured message as the e-mail it would be over SMTP: its headers and source. */
export default defineControlRoute("getMailSource", async (request) => {
  const message = await request.server.emulator.store.mail.get(request.params.messageId);
  if (!message) throw controlErrors.notFound(`no captured message with id '${request.params.messageId}'`);
  const source = await emailSource(message);
  return { headers: headersOf(source), source };
});
