/**
 * PostgreSQL's text and jsonb cannot hold U+0000; JavaScript and MongoDB strings can, and clients
 * send it (in a document, an app id in a path, a name). So every string goes into the database and
 * comes out through one reversible escape, applied in one place (database.ts: the statement values
 * and the type parsers):
 *
 *   U+0000 → U+E000 "0"        U+E000 → U+E000 U+E000        (U+E000: a private-use character)
 *
 * It is injective, so equality in SQL (keys, `=`, JSON path `==`) means equality of the originals;
 * strings without either character are stored as they are. A JSON text bound for jsonb carries
 * U+0000 as the escape `\u0000`, which jsonb refuses too: such a value goes in as `jsonParam(text)`,
 * whose escapes become the character first (and so the private-use form), and a JSON text read back
 * from a text column goes through `jsonFromDatabase` (jsonb values are parsed by the type parser).
 */

const escapeChar = "\uE000";
// biome-ignore lint/suspicious/noControlCharactersInRegex: U+0000 is what this module is about.
const needsEncoding = /[\u0000\uE000]/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: as above.
const encoded = /[\u0000\uE000]/g;
const decoded = /\uE000([0\uE000])/g;

/** The stored form of a string. */
export function encodeText(text: string): string {
  if (!needsEncoding.test(text)) return text;
  return text.replace(encoded, (c) => (c === "\u0000" ? `${escapeChar}0` : `${escapeChar}${escapeChar}`));
}

/** The string a stored form stands for. */
export function decodeText(text: string): string {
  if (!text.includes(escapeChar)) return text;
  return text.replace(decoded, (_, c: string) => (c === "0" ? "\u0000" : escapeChar));
}

/**
 * A JSON text whose U+0000 escapes become the character: `\u0000` only where it is an escape, not
 * where an escaped backslash is followed by `u0000` (the tokens are read left to right). Valid JSON
 * never holds the bare character, so jsonFromDatabase can turn it back.
 */
function unescapeNul(json: string): string {
  if (!json.includes("\\u0000")) return json;
  return json.replace(/\\\\|\\u0000/g, (token) => (token === "\\\\" ? token : "\u0000"));
}

/** A JSON text read back from a text column (decoded): the bare U+0000 as its escape again. */
export function jsonFromDatabase(text: string): string {
  return text.includes("\u0000") ? text.replaceAll("\u0000", "\\u0000") : text;
}

/** A statement value holding a JSON text (for a jsonb column, or a text column read as JSON). */
export class JsonParam {
  constructor(readonly json: string) {}
}

export const jsonParam = (json: string) => new JsonParam(json);

/**
 * A statement value as it is sent: strings encoded, arrays element by element, objects (which the
 * driver would send as JSON) as their encoded JSON text; numbers, booleans, null, dates, buffers as
 * they are.
 */
export function toDatabase(value: unknown): unknown {
  if (typeof value === "string") return encodeText(value);
  if (value === null || typeof value !== "object") return value;
  if (value instanceof JsonParam) return encodeText(unescapeNul(value.json));
  if (Array.isArray(value)) return value.map(toDatabase);
  if (value instanceof Date || Buffer.isBuffer(value) || ArrayBuffer.isView(value)) return value;
  return encodeText(unescapeNul(JSON.stringify(value)));
}

/** The jsonb (and json) type parser: decoded, then parsed. */
export function parseJson(text: string): unknown {
  return JSON.parse(text.includes(escapeChar) ? jsonFromDatabase(decodeText(text)) : text);
}
