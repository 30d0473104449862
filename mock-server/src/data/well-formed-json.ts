/**
 * Lone surrogates in JSON. A JSON string may escape half of a UTF-16 surrogate pair alone
 * (`"\ud800"`): JavaScript's JSON.stringify writes one for a string cut in the middle of an emoji
 * (`"😀".slice(0, 1)`), and JSON.parse reads it back as a string that is not Unicode. The service
 * reads its requests with Go's parsers, which replace such an escape with U+FFFD, and MongoDB stores
 * only UTF-8: a lone surrogate never reaches a document, an identity or a message there. Read the
 * same way here, texts from clients and from functions cannot store what the service could not
 * (nor what PostgreSQL refuses: its jsonb has no lone surrogates, and a write holding one failed).
 *
 * Where a text is parsed, the parsed strings are made well-formed (`wellFormedParse`: native
 * `toWellFormed`, ~25 ms for 18 MB of lone halves); where a text is passed on as text (what a
 * function made), its escapes are rewritten (`wellFormedJson`). Both look first with one
 * regular-expression test, which finds nothing in nearly every text.
 */

/** Where a text may escape a surrogate. */
export const surrogateEscape = /\\u[dD][89a-fA-F]/;

/** Whether a JSON text may hold a lone surrogate (false: it surely holds none). */
export const mayHoldLoneSurrogates = (text: string) => surrogateEscape.test(text);

type Unicode = string & { isWellFormed(): boolean; toWellFormed(): string };

/** The string, with each lone surrogate U+FFFD. */
export function wellFormedString(text: string): string {
  const unicode = text as Unicode;
  return unicode.isWellFormed() ? text : unicode.toWellFormed();
}

/** Sets an own data property (never a `__proto__` setter). */
function define(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
}

/**
 * A parsed value with each string and key made well-formed: containers are changed in place (the
 * value is the caller's fresh parse), an object whose keys change is made again (later duplicates
 * win, where the first stood: as JSON.parse of the text with its escapes rewritten). Walked
 * without recursion, however deep.
 */
export function wellFormedValue<T>(root: T): T {
  if (typeof root === "string") return wellFormedString(root) as T;
  if (root === null || typeof root !== "object") return root;
  type Slot = { container: Record<string, unknown> | unknown[]; parent: Slot | null; key: string | number };
  const pending: Slot[] = [{ container: root as Record<string, unknown>, parent: null, key: "" }];
  const rekeyed: Slot[] = [];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const { container } = next;
    const visit = (key: string | number, item: unknown) => {
      if (typeof item === "string") {
        const made = wellFormedString(item);
        if (made === item) return;
        if (Array.isArray(container)) container[key as number] = made;
        else define(container, key as string, made);
      } else if (item !== null && typeof item === "object")
        pending.push({ container: item as Record<string, unknown>, parent: next, key });
    };
    if (Array.isArray(container)) for (let i = 0; i < container.length; i++) visit(i, container[i]);
    else {
      let keysChange = false;
      for (const key of Object.keys(container)) {
        visit(key, container[key]);
        if (!(key as Unicode).isWellFormed()) keysChange = true;
      }
      if (keysChange) rekeyed.push(next);
    }
  }
  // Made again after what they hold (visited later, so remade first), then put where they stood.
  let result: unknown = root;
  for (let i = rekeyed.length - 1; i >= 0; i--) {
    const slot = rekeyed[i]!;
    const old = slot.container as Record<string, unknown>;
    const made: Record<string, unknown> = {};
    for (const key of Object.keys(old)) define(made, wellFormedString(key), old[key]);
    slot.container = made;
    if (slot.parent === null) result = made;
    else if (Array.isArray(slot.parent.container)) slot.parent.container[slot.key as number] = made;
    else define(slot.parent.container, slot.key as string, made);
  }
  return result as T;
}

/** `parse(text)` with its strings made well-formed when the text may hold a lone surrogate. */
export function wellFormedParse(text: string, parse: (text: string) => unknown): unknown {
  const value = parse(text);
  return mayHoldLoneSurrogates(text) ? wellFormedValue(value) : value;
}

/**
 * The JSON text with every escape of a lone surrogate written `\ufffd` instead: a high surrogate's
 * escape not followed by a low one's, or a low one's not preceded by a high one's. A pair, and
 * everything else (numbers' digits too), is left as it is, so JSON.parse of the result is that of
 * the text with each string made well-formed. For texts passed on as text; ~80 ns an escape
 * rewritten, nothing when the text escapes no surrogate.
 */
export const wellFormedJson = (text: string): string =>
  mayHoldLoneSurrogates(text) ? loneSurrogatesRewritten(text) : text;

/**
 * `wellFormedJson`'s rewrite, without its first look. Self-contained (it names nothing outside
 * itself): its source is also the function process's, which rewrites the texts it sends
 * (functions/sandbox-bootstrap.ts).
 */
export function loneSurrogatesRewritten(text: string): string {
  /** The UTF-16 code unit written by the four hex digits at `at`, or -1 where they are not four hex digits. */
  const hexUnit = (at: number) => {
    let unit = 0;
    for (let i = at; i < at + 4; i++) {
      const c = text.charCodeAt(i);
      const digit = c >= 48 && c <= 57 ? c - 48 : c >= 65 && c <= 70 ? c - 55 : c >= 97 && c <= 102 ? c - 87 : -1;
      if (digit < 0) return -1;
      unit = unit * 16 + digit;
    }
    return unit;
  };
  let out = "";
  let copied = 0;
  // Backslashes stand only in strings, each starting an escape: `\X` is two characters, `\uXXXX` six.
  let at = text.indexOf("\\");
  while (at !== -1) {
    if (text.charCodeAt(at + 1) !== 117 /* u */) {
      at = text.indexOf("\\", at + 2);
      continue;
    }
    const unit = hexUnit(at + 2);
    const high = unit >= 0xd800 && unit <= 0xdbff;
    let next = at + 6;
    if (high && text.charCodeAt(next) === 92 /* \ */ && text.charCodeAt(next + 1) === 117) {
      const low = hexUnit(next + 2);
      if (low >= 0xdc00 && low <= 0xdfff) next += 6;
    }
    if ((high && next === at + 6) || (unit >= 0xdc00 && unit <= 0xdfff)) {
      out += `${text.slice(copied, at)}\\ufffd`;
      copied = at + 6;
    }
    at = text.indexOf("\\", next);
  }
  return out === "" ? text : out + text.slice(copied);
}
