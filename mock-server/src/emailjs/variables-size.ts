/**
 * Whether a send's template variables pass the service's limit, measured as their JSON's UTF-8
 * bytes (deliver.ts) without writing all of it: the count stops at the limit, so 200,000 variables
 * cost what the first few thousand do (written whole, ~100 ms of the main thread).
 */
import { keysOf } from "../data/wide-keys.ts";

/** Whether `Buffer.byteLength(JSON.stringify(value))` is more than `limit`. */
export function jsonBytesOver(value: unknown, limit: number): boolean {
  let bytes = 0;
  const add = (n: number) => {
    bytes += n;
    return bytes > limit;
  };
  /** A value's bytes as JSON writes it; `inArray`: where JSON writes `null` for what it leaves out. */
  const walk = (node: unknown, inArray: boolean): boolean => {
    if (node === null || typeof node !== "object" || typeof (node as { toJSON?: unknown }).toJSON === "function") {
      const text = JSON.stringify(node);
      return add(text === undefined ? (inArray ? 4 : 0) : Buffer.byteLength(text));
    }
    if (Array.isArray(node)) {
      if (add(2 + Math.max(0, node.length - 1))) return true;
      for (const item of node) if (walk(item, true)) return true;
      return false;
    }
    const record = node as Record<string, unknown>;
    if (add(2)) return true;
    let first = true;
    for (const key of keysOf(record)) {
      const member = record[key];
      // (JSON leaves out a member it cannot write.)
      if (member === undefined || typeof member === "function" || typeof member === "symbol") continue;
      if (add((first ? 0 : 1) + Buffer.byteLength(JSON.stringify(key)) + 1)) return true;
      first = false;
      if (walk(member, false)) return true;
    }
    return false;
  };
  return walk(value, false);
}
