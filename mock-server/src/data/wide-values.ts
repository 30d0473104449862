/**
 * The walks a written document or a query sent to a worker goes through — a copy, a freeze, a
 * BSON size, a canonical Extended JSON text — a member at a time where the value is wide (an
 * object of many keys, kept by wide-keys.ts, or an array of many elements), other requests served
 * between slices (docs/decisions/0024-large-bodies-in-slices.md). Done in one step, each was 0.1–
 * 0.4 s of the main thread for a document of 200,000 fields.
 *
 * Each answers what its one-step walk answers (documents.ts `cloneValue`, ejson-text.ts
 * `freezeTree` and `canonicalEJSONText`, bson-size.ts, bson's `calculateObjectSize`): the walk
 * goes member by member through every container that `holdsWide` — a wide one, one with a wide
 * one inside at any depth, or one of many members — and hands every other member (a few thousand
 * values at most) to the one-step walk whole. `holdsWide` tells whether a value needs this at all
 * (the usual small one does not). (Looking only a few levels down, a wide object a dozen levels
 * down was copied, sized and written in one step each: 0.5 s of the main thread for an insert.)
 */
import { calculateObjectSize } from "bson";
import { bsonSizeAt, type SizeCache, utf8Length } from "./bson-size.ts";
import { cloneValue } from "./documents.ts";
import { freezeTree, keepText, keptText, markStored, maxTextDepth, textAt } from "./ejson-text.ts";
import { newDocumentId } from "./query-limits.ts";
import { Turns } from "./turns.ts";
import { isWide, keepKeys, keysOf, wideFrom } from "./wide-keys.ts";

type Plain = Record<string, unknown>;
type Container = Plain | unknown[];

function isPlain(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

const isContainer = (value: unknown): value is Container =>
  value !== null && typeof value === "object" && (Array.isArray(value) || isPlain(value));

/**
 * Whether a value holds a wide container at any depth, or more members than a few wide containers
 * have (a value that large is walked in slices too); looks through that many members at most.
 */
export function holdsWide(value: unknown): boolean {
  let left = 4 * wideFrom;
  const visit = (node: unknown): boolean => {
    if (!isContainer(node)) return false;
    if (isWide(node)) return true;
    if (Array.isArray(node)) {
      for (const item of node) if (--left < 0 || visit(item)) return true;
      return false;
    }
    for (const key in node) if (--left < 0 || visit(node[key])) return true;
    return false;
  };
  return visit(value);
}

/** Whether a walk goes through `member` a member at a time too. */
const into = (member: unknown): member is Container => isContainer(member) && holdsWide(member);

/** `cloneValue`, in slices. */
export async function cloneInSlices<T>(value: T): Promise<T> {
  return (await copy(value, new Turns())) as T;
}

/**
 * A document to insert, copied in slices with its `_id` first as MongoDB stores it: its own, or a
 * new ObjectId when it has none (`generated`), of the app's time `now` when its clock is not the
 * real one (query-limits.ts newDocumentId).
 */
export async function cloneToInsert(doc: Plain, now?: number): Promise<{ copy: Plain; generated: boolean }> {
  const generated = !Object.hasOwn(doc, "_id");
  return { copy: (await copy(doc, new Turns(), generated ? newDocumentId(now) : doc._id)) as Plain, generated };
}

async function copy(value: unknown, turns: Turns, id?: unknown): Promise<unknown> {
  if (!isContainer(value)) return cloneValue(value);
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    for (let i = 0; i < value.length; i++) {
      const member = value[i];
      out.push(into(member) ? await copy(member, turns) : cloneValue(member));
      if ((i & 63) === 63) await turns.maybe();
    }
    return out;
  }
  let keys = keysOf(value);
  const out: Plain = {};
  if (id !== undefined) {
    out._id = cloneValue(id);
    keys = ["_id", ...keys.filter((key) => key !== "_id")];
  }
  let keepable = true;
  for (let i = id === undefined ? 0 : 1; i < keys.length; i++) {
    const key = keys[i]!;
    const member = value[key];
    // (As cloneValue: a `__proto__` key sets the copy's prototype, and the copy lists other keys.)
    if (key === "__proto__") keepable = false;
    out[key] = into(member) ? await copy(member, turns) : cloneValue(member);
    if ((i & 63) === 63) await turns.maybe();
  }
  if (keepable) keepKeys(out, keys.slice());
  return out;
}

/** ejson-text.ts `freezeTree`, in slices. */
export async function freezeInSlices(value: unknown): Promise<void> {
  await freeze(value, new Turns());
}

async function freeze(value: unknown, turns: Turns): Promise<void> {
  if (!isContainer(value) || Object.isFrozen(value)) return;
  Object.freeze(value);
  const keys = Array.isArray(value) ? null : keysOf(value);
  const count = keys === null ? (value as unknown[]).length : keys.length;
  for (let i = 0; i < count; i++) {
    const member = (value as Record<string | number, unknown>)[keys === null ? i : keys[i]!];
    if (into(member)) await freeze(member, turns);
    else freezeTree(member);
    if ((i & 63) === 63) await turns.maybe();
  }
}

/** What a member of a container counts in its size, as an element (a type byte, its key, its value). */
type ElementBytes = (key: string, member: unknown, depth: number, inArray: boolean) => number;

async function size(value: Container, element: ElementBytes, turns: Turns, depth: number): Promise<number> {
  const keys = Array.isArray(value) ? null : keysOf(value);
  const count = keys === null ? (value as unknown[]).length : keys.length;
  let total = 5;
  for (let i = 0; i < count; i++) {
    const key = keys === null ? String(i) : keys[i]!;
    const member = (value as Record<string, unknown>)[key];
    if (into(member)) total += 2 + utf8Length(key) + (await size(member, element, turns, depth + 1));
    else total += element(key, member, depth + 1, keys === null);
    if ((i & 63) === 63) await turns.maybe();
  }
  return total;
}

/** bson-size.ts `bsonSize` of a document or an array (no limit), in slices. */
export function bsonSizeInSlices(value: Container, cache: SizeCache = new WeakMap()): Promise<number> {
  // An object's function or symbol member is left out; an array's counts its type byte and key.
  const element: ElementBytes = (key, member, depth, inArray) =>
    !inArray && (typeof member === "function" || typeof member === "symbol")
      ? 0
      : 2 + utf8Length(key) + bsonSizeAt(member, cache, depth);
  return size(value, element, new Turns(), 0);
}

/** bson's `calculateObjectSize` of a document, in slices (what an insert's size is checked by). */
export function documentSizeInSlices(doc: Plain): Promise<number> {
  // A document of one member is 4 + its element + 1 bytes.
  const element: ElementBytes = (key, member) => calculateObjectSize({ [key]: member }) - 5;
  return size(doc, element, new Turns(), 0);
}

/** ejson-text.ts `canonicalEJSONText` (documents.ts `toEJSONText`), in slices. */
export async function textInSlices(value: unknown): Promise<string> {
  if (value === undefined) return '{"$undefined":true}';
  const turns = new Turns();
  const written = (await text(value, turns, 0)) as string;
  // (Its last chunks joined can take a slice: what the caller does with the text, in a turn of its own.)
  await turns.maybe();
  return written;
}

/** How many members' texts a flat chunk of a wide container's text joins. */
const chunkMembers = 4096;

/**
 * A container's text put together from its members'. A wide one's in flat chunks: grown by `+=`
 * once a member, a text of a million members is a tree of as many pieces, which its first reader
 * flattens in one step (~27 ms for 11 MB, a statement's parameter, on the main thread). A narrow
 * one's by `+=`, which costs less than joining (a 200,000-field `$group`'s members are narrow).
 */
class ContainerText {
  private text: string;
  private pieces: string[] | null;
  private readonly chunks: string[] = [];

  constructor(open: string, members: number) {
    this.pieces = members > chunkMembers ? [open] : null;
    this.text = this.pieces === null ? open : "";
  }

  add(piece: string): void {
    if (this.pieces === null) {
      this.text += piece;
      return;
    }
    this.pieces.push(piece);
    if (this.pieces.length >= chunkMembers) {
      this.chunks.push(this.pieces.join(""));
      this.pieces = [];
    }
  }

  close(end: string): string {
    if (this.pieces === null) return this.text + end;
    this.pieces.push(end);
    this.chunks.push(this.pieces.join(""));
    return this.chunks.join("");
  }
}

async function text(value: unknown, turns: Turns, depth: number): Promise<string | undefined> {
  // (What the one-step writer does not write as a container, it writes here too.)
  if (!isContainer(value) || depth > maxTextDepth) return textAt(value, depth);
  if (Array.isArray(value)) {
    const out = new ContainerText("[", value.length);
    for (let i = 0; i < value.length; i++) {
      const member = value[i];
      if (i > 0) out.add(",");
      out.add((into(member) ? await text(member, turns, depth + 1) : textAt(member, depth + 1)) ?? "null");
      if ((i & 63) === 63) await turns.maybe();
    }
    return out.close("]");
  }
  if ("_bsontype" in value) return textAt(value, depth);
  // A stored document's text is kept (ejson-text.ts): used, or kept once written.
  const kept = depth <= 1 ? keptText(value) : undefined;
  if (typeof kept === "string") return kept;
  const keys = keysOf(value);
  const out = new ContainerText("{", keys.length);
  let first = true;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    const member = value[key];
    const written = into(member) ? await text(member, turns, depth + 1) : textAt(member, depth + 1);
    if ((i & 63) === 63) await turns.maybe();
    if (written === undefined) continue;
    out.add(`${first ? "" : ","}${JSON.stringify(key)}:${written}`);
    first = false;
  }
  const written = out.close("}");
  if (kept === null) keepText(value, written);
  return written;
}

/**
 * `JSON.stringify` of a value `JSON.parse` made (a request's body as it came), in slices; the
 * top-level keys in `leaveOut` are not written.
 */
export async function jsonTextInSlices(value: unknown, leaveOut: ReadonlySet<string> = new Set()): Promise<string> {
  const turns = new Turns();
  const written = (await json(value, turns, leaveOut)) ?? "null";
  await turns.maybe();
  return written;
}

async function json(value: unknown, turns: Turns, leaveOut?: ReadonlySet<string>): Promise<string | undefined> {
  if (!isContainer(value)) return JSON.stringify(value);
  if (Array.isArray(value)) {
    const out = new ContainerText("[", value.length);
    for (let i = 0; i < value.length; i++) {
      const item = value[i];
      const written = into(item) ? await json(item, turns) : JSON.stringify(item);
      out.add(`${i > 0 ? "," : ""}${written ?? "null"}`);
      if ((i & 63) === 63) await turns.maybe();
    }
    return out.close("]");
  }
  const keys = keysOf(value);
  const out = new ContainerText("{", keys.length);
  let first = true;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    if ((i & 63) === 63) await turns.maybe();
    if (leaveOut?.has(key)) continue;
    const item = value[key];
    const written = into(item) ? await json(item, turns) : JSON.stringify(item);
    if (written === undefined) continue;
    out.add(`${first ? "" : ","}${JSON.stringify(key)}:${written}`);
    first = false;
  }
  return out.close("}");
}

/**
 * ejson-text.ts `storeDocument` of a copy of a document (`cloneValue`), in slices, with the copy's
 * text (kept on it, as a store's first write of it keeps it).
 */
export async function storeInSlices(doc: Plain): Promise<{ stored: Plain; text: string }> {
  const stored = await cloneInSlices(doc);
  markStored(stored, await bsonSizeInSlices(stored));
  await freezeInSlices(stored);
  return { stored, text: await textInSlices(stored) };
}
