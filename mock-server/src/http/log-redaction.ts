/**
 * Secrets never reach the logs. Request lines carry no headers and a redacted URL (app.ts's `req`
 * serializer); anything else logged with an object — an error's context, a body — has every field
 * named like a secret (the journal's list, plus the Authorization and Cookie headers) censored, at
 * any depth, when the line is written.
 *
 * (pino's own `redact` option does the same for listed paths, but with wildcard paths it also runs
 * over the bindings of every child logger — one per request — which cost each request ~0.7 µs even
 * when nothing is logged. This runs only for lines that are written.)
 */
import { redacted, secretFieldNames } from "../state/journal.ts";

const secretKeys = new Set<string>([...secretFieldNames, "authorization", "cookie"]);

function isPlain(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** A copy with secret-named fields censored; errors and other class instances are left to pino's serializers. */
export function redactForLog(value: unknown, depth = 0): unknown {
  if (value === null || typeof value !== "object") return value;
  if (depth > 20) return redacted;
  if (Array.isArray(value)) return value.map((item) => redactForLog(item, depth + 1));
  if (!isPlain(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    out[key] = secretKeys.has(key.toLowerCase()) ? redacted : redactForLog(item, depth + 1);
  }
  return out;
}

type LogMethod = (this: unknown, ...args: unknown[]) => void;

/** pino's hook on every written line (`hooks.logMethod`): its merging object, censored. */
export const redactingHooks = {
  logMethod(this: unknown, args: unknown[], method: LogMethod): void {
    const [first, ...rest] = args;
    if (first !== null && typeof first === "object") method.apply(this, [redactForLog(first), ...rest]);
    else method.apply(this, args);
  },
};
