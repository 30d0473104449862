/**
 * The keys of very wide objects, kept from when they were built. Listing an object's keys is one
 * step however many it has (`Object.keys`, `for…in`, `Object.entries`): 70–150 ms for 200,000, on
 * the main thread, for every walk of a wide query or document (docs/decisions/0024). The sliced
 * body reader (http/json-body.ts), the sliced Extended JSON reader (ejson-in-slices.ts) and the
 * sliced copies (wide-values.ts) know each object's keys as they add them, in order: they keep the
 * lists of the wide ones here, and every walk that may meet a wide value lists keys through
 * `keysOf`.
 *
 * Kept only for objects nobody changes afterwards (a request's arguments, a store's private copy);
 * `setKey` adds a key to one and its list together.
 */

/** Objects with at least this many keys (arrays with this many elements) are wide. */
export const wideFrom = 1024;

const kept = new WeakMap<object, string[]>();

/** Keeps the keys of `obj` (its own enumerable keys, in order), when it is wide. */
export function keepKeys(obj: object, keys: string[]): void {
  if (keys.length >= wideFrom) kept.set(obj, keys);
}

/** The keys kept for a wide object, else undefined. */
export function keptKeys(obj: object): readonly string[] | undefined {
  return kept.get(obj);
}

/** An object's own enumerable keys, in order: those kept, else listed. */
export function keysOf(obj: object): readonly string[] {
  return kept.get(obj) ?? Object.keys(obj);
}

/** Whether a plain object has no keys (listing none of a wide one's). */
export function hasNoKeys(obj: object): boolean {
  if (kept.has(obj)) return false;
  for (const _ in obj) return false;
  return true;
}

/**
 * Whether a key is an array index: an object lists those first, in numeric order, whatever order
 * they were added in (an object holding one keeps no list).
 */
export function isIndexKey(key: string): boolean {
  return /^(?:0|[1-9]\d{0,9})$/.test(key) && Number(key) < 4_294_967_295;
}

/** Sets a member of an object, adding its key to the object's kept keys when it is new. */
export function setKey(obj: Record<string, unknown>, key: string, value: unknown): void {
  const keys = kept.get(obj);
  if (keys !== undefined && !Object.hasOwn(obj, key)) {
    if (isIndexKey(key)) kept.delete(obj);
    else keys.push(key);
  }
  obj[key] = value;
}

/** Whether a value is a wide array or a wide object whose keys are kept. */
export function isWide(value: unknown): boolean {
  if (value === null || typeof value !== "object") return false;
  return Array.isArray(value) ? value.length >= wideFrom : kept.has(value);
}
