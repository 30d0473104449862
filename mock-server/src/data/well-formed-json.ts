/**
 * Lone surrogates in JSON text. A JSON string may escape half of a UTF-16 surrogate pair alone
 * (`"\ud800"`): JavaScript's JSON.stringify writes one for a string cut in the middle of an emoji
 * (`"😀".slice(0, 1)`), and JSON.parse reads it back as a string that is not Unicode. The service
 * reads its requests with Go's parsers, which replace such an escape with U+FFFD, and MongoDB stores
 * only UTF-8: a lone surrogate never reaches a document, an identity or a message there. Read the
 * same way here, texts from clients and from functions cannot store what the service could not
 * (nor what PostgreSQL refuses: its jsonb has no lone surrogates, and a write holding one failed).
 */

/** Where a text may escape a surrogate: one regular-expression test on the texts of every request. */
const surrogateEscape = /\\u[dD][89a-fA-F]/;

/** The UTF-16 code unit written by the four hex digits at `at`, or -1 where they are not four hex digits. */
function hexUnit(text: string, at: number): number {
  let unit = 0;
  for (let i = at; i < at + 4; i++) {
    const c = text.charCodeAt(i);
    const digit = c >= 48 && c <= 57 ? c - 48 : c >= 65 && c <= 70 ? c - 55 : c >= 97 && c <= 102 ? c - 87 : -1;
    if (digit < 0) return -1;
    unit = unit * 16 + digit;
  }
  return unit;
}

const isHigh = (unit: number) => unit >= 0xd800 && unit <= 0xdbff;
const isLow = (unit: number) => unit >= 0xdc00 && unit <= 0xdfff;

/**
 * The JSON text with every escape of a lone surrogate written `\ufffd` instead: a high surrogate's
 * escape not followed by a low one's, or a low one's not preceded by a high one's. A pair, and
 * everything else, is left as it is (so JSON.parse of the result is JSON.parse of the text with
 * `toWellFormed()` applied to each string, keys too). The text itself is answered when it escapes
 * no surrogate.
 */
export function wellFormedJson(text: string): string {
  if (!surrogateEscape.test(text)) return text;
  let out = "";
  let copied = 0;
  // Backslashes stand only in strings, each starting an escape: `\X` is two characters, `\uXXXX` six.
  let at = text.indexOf("\\");
  while (at !== -1) {
    if (text.charCodeAt(at + 1) !== 117 /* u */) {
      at = text.indexOf("\\", at + 2);
      continue;
    }
    const unit = hexUnit(text, at + 2);
    let next = at + 6;
    if (isHigh(unit) && text.charCodeAt(next) === 92 /* \ */ && text.charCodeAt(next + 1) === 117) {
      if (isLow(hexUnit(text, next + 2))) next += 6;
    }
    if ((isHigh(unit) && next === at + 6) || isLow(unit)) {
      out += `${text.slice(copied, at)}\\ufffd`;
      copied = at + 6;
    }
    at = text.indexOf("\\", next);
  }
  return out === "" ? text : out + text.slice(copied);
}

type Unicode = string & { isWellFormed(): boolean; toWellFormed(): string };

function wellFormedString(text: string): string {
  const unicode = text as Unicode;
  return unicode.isWellFormed() ? text : unicode.toWellFormed();
}

/**
 * A value read by another parser (a JWT's claims) with each string and key made well-formed, as
 * `wellFormedJson` reads a text: the value itself when every string is.
 */
export function wellFormedValue<T>(value: T): T {
  if (typeof value === "string") return wellFormedString(value) as T;
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) {
    const items = value.map(wellFormedValue);
    return (items.every((item, i) => item === value[i]) ? value : items) as T;
  }
  let changed = false;
  const entries = Object.entries(value).map(([key, item]) => {
    const made: [string, unknown] = [wellFormedString(key), wellFormedValue(item)];
    if (made[0] !== key || made[1] !== item) changed = true;
    return made;
  });
  return (changed ? Object.fromEntries(entries) : value) as T;
}
