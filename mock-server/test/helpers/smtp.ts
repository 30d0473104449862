/** A local SMTP server for the mail tests (the smtp-server package), recording what it receives. */
import { type AddressInfo, createServer as createNetServer } from "node:net";
import { SMTPServer } from "smtp-server";
import { expect } from "vitest";

export interface Received {
  from: string;
  to: string[];
  raw: string;
}

/** A local SMTP server; `refuse` rejects recipients it matches with 550. */
export function smtpServer(port = 0, refuse: RegExp | null = null) {
  const received: Received[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS"],
    logger: false,
    onRcptTo(address, _session, callback) {
      if (refuse?.test(address.address)) {
        const error = Object.assign(new Error("mailbox unavailable"), { responseCode: 550 });
        return callback(error);
      }
      callback();
    },
    onData(stream, session, callback) {
      let raw = "";
      stream.setEncoding("utf8");
      stream.on("data", (chunk: string) => (raw += chunk));
      stream.on("end", () => {
        received.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
          to: session.envelope.rcptTo.map((r) => r.address),
          raw,
        });
        callback();
      });
    },
  });
  return new Promise<{ server: SMTPServer; port: number; received: Received[]; close: () => Promise<void> }>(
    (resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => {
        const address = server.server.address() as AddressInfo;
        resolve({
          server,
          port: address.port,
          received,
          close: () => new Promise<void>((done) => server.close(() => done())),
        });
      });
    },
  );
}

/** Quoted-printable soft breaks and escapes, enough to read a link out of a message. */
export const decodeQuotedPrintable = (text: string) =>
  text
    .replace(/=\r?\n/g, "")
    .replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));

/**
 * A confirmation mail as the SMTP server got it matches the captured message (sender, subject, the
 * link in its body), and its link confirms the registration on `url`.
 */
export async function expectDeliveredConfirmation(
  url: string,
  got: Received,
  message: { from: string; subject: string; links: string[] },
): Promise<void> {
  expect(got.from).toBe(message.from);
  expect(got.raw).toMatch(new RegExp(`^Subject: ${message.subject}`, "m"));
  const link = message.links.find((l) => l.includes("token="))!;
  expect(decodeQuotedPrintable(got.raw)).toContain(link.replaceAll("&", "&amp;"));
  const params = new URL(link).searchParams;
  const confirmed = await fetch(`${url}/api/client/v2.0/app/local-app/auth/providers/local-userpass/confirm`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ token: params.get("token"), tokenId: params.get("tokenId") }),
  });
  expect(confirmed.status).toBe(200);
}

/** Registers an address with the default app (its confirmation mail is what the mail tests send). */
export const register = (url: string, email: string) =>
  fetch(`${url}/api/client/v2.0/app/local-app/auth/providers/local-userpass/register`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email, password: "correct horse" }),
  });

/**
 * A port where the SMTP server is "down": it drops every connection at once. The port stays held
 * until `free()` (then an SMTP server may take it): a port merely closed could be taken meanwhile
 * by another test's server, which would keep the relay's connection waiting for a greeting
 * instead of failing it.
 */
export async function downPort(): Promise<{ port: number; free: () => Promise<void> }> {
  const down = createNetServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => down.listen(0, "127.0.0.1", resolve));
  return {
    port: (down.address() as AddressInfo).port,
    free: () => new Promise<void>((resolve) => (down.listening ? down.close(() => resolve()) : resolve())),
  };
}
