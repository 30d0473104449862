#!/usr/bin/env node
// The rehearsal's mail server, a process of its own: a real SMTP server (the smtp-server package) on
// a loopback port that accepts every message and keeps it, parsed (postal-mime), as one JSON file in
// a folder — from, to, subject, text, html and the raw message — for the journeys to read.
//
//   node scripts/rehearsal/smtp-sink.mjs --dir DIR [--port N]
//
// Prints `smtp listening on <port>` once it accepts connections; stops on SIGTERM or SIGINT. Started
// again on the same folder (a mail server back after an outage), it numbers on after what it kept.
import { readdirSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import PostalMime from "postal-mime";
import { SMTPServer } from "smtp-server";

const { values } = parseArgs({ options: { dir: { type: "string" }, port: { type: "string", default: "0" } } });
if (!values.dir) {
  process.stderr.write("usage: node scripts/rehearsal/smtp-sink.mjs --dir DIR [--port N]\n");
  process.exit(2);
}
const dir = values.dir;
let count = readdirSync(dir).filter((name) => /^\d+\.json$/.test(name)).length;

const server = new SMTPServer({
  authOptional: true,
  disabledCommands: ["STARTTLS"],
  logger: false,
  onData(stream, session, callback) {
    const chunks = [];
    stream.on("data", (chunk) => chunks.push(chunk));
    stream.on("end", async () => {
      try {
        const raw = Buffer.concat(chunks).toString("utf8");
        const email = await PostalMime.parse(raw);
        const message = {
          envelope: {
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
            to: session.envelope.rcptTo.map((r) => r.address),
          },
          from: email.from?.address ?? "",
          to: (email.to ?? []).map((a) => a.address),
          subject: email.subject ?? "",
          text: email.text ?? "",
          html: email.html ?? "",
          receivedAt: new Date().toISOString(),
          raw,
        };
        count += 1;
        // Written whole, then renamed: a reader never sees half a message.
        const name = `${String(count).padStart(5, "0")}.json`;
        writeFileSync(join(dir, `.${name}`), JSON.stringify(message, null, 2));
        renameSync(join(dir, `.${name}`), join(dir, name));
        callback();
      } catch (error) {
        callback(error);
      }
    });
  },
});

server.listen(Number(values.port), "127.0.0.1", () => {
  process.stdout.write(`smtp listening on ${server.server.address().port}\n`);
});
// Every message is on disk once accepted: nothing to wait for (an open client connection would hold
// a graceful close).
for (const signal of ["SIGTERM", "SIGINT"]) process.on(signal, () => process.exit(0));
