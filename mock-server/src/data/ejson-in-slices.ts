/**
 * A large request's Extended JSON arguments read into BSON-typed values a part at a time, other
 * requests served in between (docs/decisions/0024-large-bodies-in-slices.md). Read whole,
 * `fromEJSON` is one synchronous step: ~1.3 s for a filter of 200,000 conditions.
 *
 * The bson library's reader revives a value from the leaves up, each object by its own keys only
 * (`deserializeValue`), so a container that is not one of Extended JSON's type wrappers reads as
 * itself holding its members read: the large containers are rebuilt here member by member, and the
 * members between them are read by `fromEJSON` in parts of about `partChars`, each as an element of
 * an array (which the reader leaves as it is). The result is `fromEJSON`'s.
 */
import { BSONError } from "bson";
import { JsonBodyError, parseJsonBodyInSlices, slicedFrom } from "../http/json-body.ts";
import { codecKeys, fromEJSON, fromEJSONText } from "./documents.ts";
import { Turns } from "./turns.ts";
import { keepKeys, keysOf } from "./wide-keys.ts";

/** About what `fromEJSON` reads in one step (characters of JSON): a millisecond or two. */
export const partChars = 32 * 1024;

/**
 * The most values a large type wrapper may hold: it is read whole, and a wrapper holds a string or
 * a few (a DBRef's other fields, a `$code`'s `$scope` are the only wrappers that may hold more).
 */
export const maxWrapperValues = 10_000;

type Container = Record<string, unknown> | unknown[];

/**
 * Whether the reader takes this object for a type wrapper (or may: a DBRef's test is wider here);
 * refuses a key the reader refuses. Looks through the keys in turns (200,000 take ~30 ms).
 */
async function isWrapper(node: Record<string, unknown>, keys: readonly string[], turns: Turns): Promise<boolean> {
  let wrapper = false;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    if (codecKeys.has(key) && node[key] != null) wrapper = true;
    if (key.includes("\u0000"))
      throw new BSONError(`BSON Document field names cannot contain null bytes, found: ${JSON.stringify(key)}`);
    if ((i & 4095) === 4095) await turns.maybe();
  }
  return (
    wrapper ||
    Boolean(node.$undefined) ||
    node.$date != null ||
    node.$code != null ||
    Boolean(node.$dbPointer) ||
    (typeof node.$ref === "string" && node.$id != null)
  );
}

const isContainer = (value: unknown): value is Container => value !== null && typeof value === "object";

/** About the length of a primitive's JSON. */
const primitiveChars = (value: unknown): number => (typeof value === "string" ? value.length + 2 : 6);

/** About the length of a small value's JSON (its containers are not large: bounded by partChars). */
function charsOf(value: unknown): number {
  if (!isContainer(value)) return primitiveChars(value);
  let chars = 2;
  if (Array.isArray(value)) for (const item of value) chars += charsOf(item) + 1;
  else for (const key in value) chars += key.length + 4 + charsOf(value[key]);
  return chars;
}

interface Size {
  chars: number;
  values: number;
  /** An object's keys (kept by the body's reader for a wide one: wide-keys.ts). */
  keys: readonly string[] | null;
}

/** The containers whose JSON is longer than a part, with their sizes (walked from the leaves up, in turns). */
async function largeContainers(root: Container, turns: Turns): Promise<Map<Container, Size>> {
  const large = new Map<Container, Size>();
  interface Entry extends Size {
    node: Container;
    next: number;
  }
  const enter = (node: Container): Entry => ({
    node,
    keys: Array.isArray(node) ? null : keysOf(node),
    next: 0,
    chars: 2,
    values: 1,
  });
  const stack = [enter(root)];
  for (let steps = 1; stack.length > 0; steps++) {
    const top = stack[stack.length - 1]!;
    const { keys } = top;
    if (top.next < (keys ?? (top.node as unknown[])).length) {
      const key = keys === null ? top.next : keys[top.next]!;
      top.next++;
      if (keys !== null) top.chars += (key as string).length + 3;
      const child = (top.node as Record<string | number, unknown>)[key];
      if (isContainer(child)) stack.push(enter(child));
      else {
        top.chars += primitiveChars(child) + 1;
        top.values++;
      }
    } else {
      stack.pop();
      if (top.chars > partChars) large.set(top.node, { chars: top.chars, values: top.values, keys: top.keys });
      const parent = stack[stack.length - 1];
      if (parent !== undefined) {
        parent.chars += top.chars + 1;
        parent.values += top.values;
      }
    }
    if ((steps & 1023) === 0) await turns.maybe();
  }
  return large;
}

/** Sets a member as the reader would (a `__proto__` key is an own field, never the prototype). */
function put(container: Container, key: string | number, value: unknown): void {
  if (key === "__proto__")
    Object.defineProperty(container, key, { value, enumerable: true, writable: true, configurable: true });
  else (container as Record<string | number, unknown>)[key] = value;
}

async function readLarge(node: Container, large: Map<Container, Size>, turns: Turns): Promise<unknown> {
  const { keys, values } = large.get(node)!;
  if (keys !== null && (await isWrapper(node as Record<string, unknown>, keys, turns))) {
    if (values > maxWrapperValues)
      throw new Error(
        `an Extended JSON type wrapper (an object with a ${keys.filter((key) => key.startsWith("$")).join(" or ")} field) holds ${values} values; at most ${maxWrapperValues} are read`,
      );
    return fromEJSON(node);
  }
  const read: Container = keys === null ? [] : {};
  let part: unknown[] = [];
  let at: (string | number)[] = [];
  let chars = 0;
  const readPart = () => {
    const values = fromEJSON(part) as unknown[];
    for (let i = 0; i < values.length; i++) put(read, at[i]!, values[i]);
    part = [];
    at = [];
    chars = 0;
  };
  const count = keys === null ? (node as unknown[]).length : keys.length;
  for (let i = 0; i < count; i++) {
    const key = keys === null ? i : keys[i]!;
    const member = (node as Record<string | number, unknown>)[key];
    if (isContainer(member) && large.has(member)) {
      if (part.length > 0) readPart();
      put(read, key, await readLarge(member, large, turns));
      continue;
    }
    part.push(member);
    at.push(key);
    chars += charsOf(member);
    if (chars >= partChars) readPart();
    if (chars === 0 || (i & 63) === 63) await turns.maybe();
  }
  if (part.length > 0) readPart();
  if (keys !== null) keepKeys(read, keys.slice());
  return read;
}

/** `fromEJSON` of a large value (from a request body: JSON.parse's kind of value), a part at a time. */
export async function fromEJSONInSlices(value: unknown): Promise<unknown> {
  if (!isContainer(value)) return fromEJSON(value);
  const turns = new Turns();
  const large = await largeContainers(value, turns);
  if (!large.has(value)) return fromEJSON(value);
  return readLarge(value, large, turns);
}

/** From how many characters a text is read in slices (as a request's body is). */
export const largeTextChars = slicedFrom;

/**
 * `fromEJSONText` of a text, a large one (a worker's answer, a stored document of 200,000 fields)
 * a slice at a time: its JSON read by the request bodies' reader, then its values. Read at once,
 * 0.25–0.4 s. A text that reader refuses (a `__proto__` key a stored document may hold) is read at
 * once.
 */
export async function fromEJSONTextInSlices(text: string): Promise<unknown> {
  if (text.length < largeTextChars) return fromEJSONText(text);
  let json: unknown;
  try {
    json = await parseJsonBodyInSlices(text);
  } catch (error) {
    if (error instanceof JsonBodyError) return fromEJSONText(text);
    throw error;
  }
  return fromEJSONInSlices(json);
}
