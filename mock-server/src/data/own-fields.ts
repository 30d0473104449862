/**
 * A document's fields by name, as MongoDB has them: only its own. A path through `__proto__`,
 * `constructor` or `toString` must not reach what every object inherits — read, the prototype's
 * members would be taken for fields; written, `Object.prototype` itself would change, for every
 * request the process serves.
 */
import type { Document } from "./documents.ts";

/** A document's own field, or undefined (never a member its prototype gives). */
export const ownField = (doc: Document, name: string): unknown => (Object.hasOwn(doc, name) ? doc[name] : undefined);

/** Sets a document's own field (a `__proto__` one too, never the prototype). */
export function setOwnField(doc: Document, name: string, value: unknown): void {
  if (name === "__proto__")
    Object.defineProperty(doc, name, { value, enumerable: true, writable: true, configurable: true });
  else doc[name] = value;
}

/**
 * Why a client's field path may not be used, or null: `__proto__` anywhere in it, as the query
 * engine refuses it in a selector (and a request body may hold no such key), or `constructor`
 * followed by `prototype` (which a request body may not hold either).
 */
export function forbiddenPath(path: string): string | null {
  if (!path.includes("__proto__") && !path.includes("prototype")) return null;
  const parts = path.split(".");
  if (parts.includes("__proto__")) return `Accessing __proto__ is not allowed in selector: '${path}'.`;
  for (let i = 1; i < parts.length; i++)
    if (parts[i] === "prototype" && parts[i - 1] === "constructor")
      return `Accessing constructor.prototype is not allowed in selector: '${path}'.`;
  return null;
}
