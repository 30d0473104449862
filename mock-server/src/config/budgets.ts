/**
 * What one instance shares among all its clients (`--budgets`): memory that a few clients' requests
 * or streams could otherwise take from everyone, and connections per client address. Each is
 * enforced where it is spent (decision 0024; http/connection-cap.ts); here they are named, given
 * their defaults and read from the command line. The defaults suit an instance with a few GB of
 * memory; an operator sizes them to the machine (a small one lower, a large one higher).
 */
import { defaultConnectionsPerAddress } from "../http/connection-cap.ts";
import { unsentReplyLimits } from "../http/unsent-replies.ts";
import { largeRequestLimits, maxRequestBodyBytes } from "../runtime/large-requests.ts";
import { streamBacklogLimits } from "../runtime/stream-backlog.ts";

export interface Budgets {
  /** Bytes of request bodies of 16 KiB or more being read and acted on, together. */
  bodies: number;
  /** Bytes of large replies their clients have not read yet, together. */
  replies: number;
  /** Bytes of change events the instance's streams hold unsent, together. */
  streams: number;
  /** Connections one client address may hold open at once (a trusted proxy's are not counted). */
  connections: number;
}

export const defaultBudgets: Readonly<Budgets> = {
  bodies: largeRequestLimits.bytes,
  replies: unsentReplyLimits.bytes,
  streams: streamBacklogLimits.total,
  connections: defaultConnectionsPerAddress,
};

const names = Object.keys(defaultBudgets) as (keyof Budgets)[];
const mib = 1024 * 1024;
/** The least each byte budget may be: the largest body must be taken alone; the others hold at least a few events or replies. */
const least: Record<Exclude<keyof Budgets, "connections">, [number, string]> = {
  bodies: [maxRequestBodyBytes, "18 MiB), so that the largest body is taken alone"],
  replies: [mib, "1 MiB)"],
  streams: [mib, "1 MiB)"],
};
const units: Record<string, number> = { "": 1, b: 1, kib: 1024, mib, gib: 1024 * mib };

/** A size in bytes (`512KiB`, `64MiB`, `1GiB`, or plain bytes), or undefined when it is not one. */
function size(text: string): number | undefined {
  const match = /^(\d+)\s*([a-z]*)$/i.exec(text.trim());
  const unit = match ? units[match[2]!.toLowerCase()] : undefined;
  if (!match || unit === undefined) return undefined;
  const bytes = Number(match[1]) * unit;
  return Number.isSafeInteger(bytes) ? bytes : undefined;
}

/** `bodies=128MiB,replies=1GiB,…`: the budgets it names, or why it cannot be read. */
export function parseBudgets(text: string): Partial<Budgets> | string {
  const budgets: Partial<Budgets> = {};
  for (const pair of text.split(",").map((p) => p.trim())) {
    const at = pair.indexOf("=");
    if (at <= 0) return `'${pair}' is not KEY=VALUE`;
    const name = pair.slice(0, at).trim() as keyof Budgets;
    const value = pair.slice(at + 1).trim();
    if (!names.includes(name)) return `'${name}' is not one of ${names.join(", ")}`;
    if (budgets[name] !== undefined) return `${name} is given twice`;
    if (name === "connections") {
      const count = /^\d+$/.test(value) ? Number(value) : Number.NaN;
      if (!(count >= 1 && count <= 1_000_000)) return `connections: '${value}' is not a count from 1 to 1000000`;
      budgets.connections = count;
      continue;
    }
    const bytes = size(value);
    if (bytes === undefined) return `${name}: '${value}' is not a size (bytes, or with KiB, MiB or GiB)`;
    const [minimum, why] = least[name];
    if (bytes < minimum) return `${name}: at least ${minimum} bytes (${why}`;
    budgets[name] = bytes;
  }
  return budgets;
}
