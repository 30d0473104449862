/** The server's log lines as a test reads them: a stream to give `testApp`, and what came through it. */
import { Writable } from "node:stream";

export interface LogLine {
  level?: number;
  msg?: string;
  trigger?: string;
  reason?: string;
  [key: string]: unknown;
}

export function logLines(): { logStream: Writable; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const logStream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split("\n").filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logStream, lines };
}

/** Whether a line says this trigger failed (`msg`) for a reason matching `reason`. */
export const triggerFailed = (lines: LogLine[], msg: string, trigger: string, reason: RegExp) =>
  lines.some((line) => line.msg === msg && line.trigger === trigger && reason.test(String(line.reason)));
