/** A tiny element builder: `h("button", { class: "primary", onclick }, "Save")`. */
export type Child = Node | string | number | null | undefined | false | Child[];
type AttrValue = string | number | boolean | null | undefined | ((event: Event) => void);

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, AttrValue> | null = null,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (typeof value === "function") element.addEventListener(name.slice(2), value);
    else if (value === true) element.setAttribute(name, "");
    else if (value !== false && value !== null && value !== undefined) element.setAttribute(name, String(value));
  }
  append(element, children);
  return element;
}

function append(parent: Node, children: Child[]): void {
  for (const child of children) {
    if (Array.isArray(child)) append(parent, child);
    else if (child instanceof Node) parent.appendChild(child);
    else if (child !== null && child !== undefined && child !== false)
      parent.appendChild(document.createTextNode(String(child)));
  }
}

/**
 * A table with a caption and column headers; `rows` empty shows `empty` instead. Each cell carries
 * its column's name (`data-label`), which a narrow screen shows beside it when rows become cards.
 */
export function table(
  caption: string,
  headers: string[],
  rows: Child[][],
  empty: string,
  rowAttrs?: (i: number) => Record<string, AttrValue>,
): HTMLElement {
  if (rows.length === 0) return h("p", { class: "empty" }, empty);
  return h(
    "table",
    null,
    h("caption", null, caption),
    h(
      "thead",
      null,
      h(
        "tr",
        null,
        headers.map((text) => h("th", { scope: "col" }, text)),
      ),
    ),
    h(
      "tbody",
      null,
      rows.map((cells, i) =>
        h(
          "tr",
          rowAttrs?.(i) ?? null,
          cells.map((cell, column) => h("td", { "data-label": headers[column] ?? "" }, cell)),
        ),
      ),
    ),
  );
}

/** JSON in a block that scrolls when long (focusable, so it scrolls from the keyboard too). */
export const json = (value: unknown) => h("pre", { class: "json", tabindex: 0 }, JSON.stringify(value, null, 2));

export const time = (iso: string) => h("time", { datetime: iso, title: iso }, new Date(iso).toLocaleString());

/**
 * An app's current time, to the minute (its offset from real time is shown beside it in seconds):
 * so a page showing it renders the same until the minute turns, and a live update that changes
 * nothing else leaves the page as it is.
 */
export function clockTime(iso: string): HTMLTimeElement {
  const minute = new Date(iso);
  minute.setUTCSeconds(0, 0);
  const text = minute.toISOString().replace(":00.000Z", "Z");
  return h(
    "time",
    { datetime: text, title: text },
    minute.toLocaleString([], { dateStyle: "short", timeStyle: "short" }),
  );
}

/** Field list: `[["From", "a@b"], …]`, skipping empty values. */
export function fields(entries: [string, Child][]): HTMLElement {
  return h(
    "dl",
    { class: "fields" },
    entries
      .filter(([, value]) => value !== undefined && value !== null && value !== "")
      .map(([name, value]) => [h("dt", null, name), h("dd", null, value)]),
  );
}

/** Section links that look like tabs; the current one is marked for assistive technology. */
export function sectionNav(label: string, items: { href: string; text: string; current: boolean }[]): HTMLElement {
  return h(
    "nav",
    { "aria-label": label },
    h(
      "ul",
      { class: "tabs" },
      items.map((item) =>
        h("li", null, h("a", { href: item.href, "aria-current": item.current ? "page" : null }, item.text)),
      ),
    ),
  );
}
