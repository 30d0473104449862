/**
 * Canonical Extended JSON (as the control API answers documents) read as BSON types for people:
 * `{"$numberLong": "5"}` is an Int64 5, `{"$date": {"$numberLong": "…"}}` a date. No DOM here.
 */

export type Typed =
  | { kind: "value"; type: string; text: string }
  | { kind: "object"; type: "Object"; fields: [string, Typed][] }
  | { kind: "array"; type: "Array"; items: Typed[] };

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json =>
  value !== null && typeof value === "object" && !Array.isArray(value);

/** The one key of a wrapper such as `{"$oid": …}` (extra keys allowed only where the format has them). */
function wrapper(value: Json): string | undefined {
  const keys = Object.keys(value);
  if (keys.length === 1 && keys[0]!.startsWith("$")) return keys[0];
  if (keys.length === 2 && keys.includes("$code") && keys.includes("$scope")) return "$code";
  if (keys.length === 2 && keys.includes("$regex") && keys.includes("$options")) return "$regex";
  return undefined;
}

function dateText(value: unknown): string | undefined {
  const ms = isObject(value) && typeof value.$numberLong === "string" ? Number(value.$numberLong) : undefined;
  const date = typeof value === "string" ? new Date(value) : ms !== undefined ? new Date(ms) : undefined;
  if (!date || Number.isNaN(date.getTime())) return undefined;
  return date.toISOString();
}

/** A UUID's text from base64 bytes (Binary subtype 4). */
function uuidText(base64: string): string | undefined {
  try {
    const hex = Array.from(atob(base64), (c) => c.charCodeAt(0).toString(16).padStart(2, "0")).join("");
    if (hex.length !== 32) return undefined;
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  } catch {
    return undefined;
  }
}

const value = (type: string, text: string): Typed => ({ kind: "value", type, text });

/** A BSON value of a wrapper, or undefined when the object is a plain document after all. */
function special(object: Json): Typed | undefined {
  const key = wrapper(object);
  if (key === undefined) return undefined;
  const inner = object[key];
  switch (key) {
    case "$oid":
      return typeof inner === "string" ? value("ObjectId", inner) : undefined;
    case "$date": {
      const text = dateText(inner);
      return text === undefined ? undefined : value("Date", text);
    }
    case "$numberInt":
      return typeof inner === "string" ? value("Int32", inner) : undefined;
    case "$numberLong":
      return typeof inner === "string" ? value("Int64", inner) : undefined;
    case "$numberDouble":
      return typeof inner === "string" ? value("Double", inner) : undefined;
    case "$numberDecimal":
      return typeof inner === "string" ? value("Decimal128", inner) : undefined;
    case "$binary": {
      if (!isObject(inner) || typeof inner.base64 !== "string") return undefined;
      const subType = String(inner.subType ?? "00");
      const uuid = subType === "04" ? uuidText(inner.base64) : undefined;
      return uuid ? value("UUID", uuid) : value(`Binary (subtype ${subType})`, inner.base64);
    }
    case "$uuid":
      return typeof inner === "string" ? value("UUID", inner) : undefined;
    case "$regularExpression":
      return isObject(inner) && typeof inner.pattern === "string"
        ? value("Regex", `/${inner.pattern}/${String(inner.options ?? "")}`)
        : undefined;
    case "$regex":
      return typeof inner === "string" ? value("Regex", `/${inner}/${String(object.$options ?? "")}`) : undefined;
    case "$timestamp":
      return isObject(inner) ? value("Timestamp", `t ${String(inner.t)}, i ${String(inner.i)}`) : undefined;
    case "$minKey":
      return value("MinKey", "MinKey");
    case "$maxKey":
      return value("MaxKey", "MaxKey");
    case "$code":
      return typeof inner === "string" ? value(object.$scope ? "Code with scope" : "Code", inner) : undefined;
    case "$symbol":
      return typeof inner === "string" ? value("Symbol", inner) : undefined;
    case "$undefined":
      return value("Undefined", "undefined");
    case "$dbPointer":
      return isObject(inner) ? value("DBPointer", JSON.stringify(inner)) : undefined;
    default:
      return undefined;
  }
}

/** An Extended JSON value as a typed tree. */
export function typed(input: unknown): Typed {
  if (input === null) return value("Null", "null");
  if (typeof input === "boolean") return value("Boolean", String(input));
  if (typeof input === "string") return value("String", input);
  if (typeof input === "number") return value(Number.isInteger(input) ? "Int32" : "Double", String(input));
  if (Array.isArray(input)) return { kind: "array", type: "Array", items: input.map(typed) };
  if (isObject(input)) {
    return (
      special(input) ?? {
        kind: "object",
        type: "Object",
        fields: Object.entries(input).map(([name, field]) => [name, typed(field)]),
      }
    );
  }
  return value(typeof input, String(input));
}

export interface FieldRow {
  /** `a.b.0`: where the field is in the document. */
  path: string;
  depth: number;
  type: string;
  /** Empty for objects and arrays (their fields follow as rows of their own). */
  text: string;
}

/** A document's fields as rows, nested fields after their parent with their full path. */
export function fieldRows(document: Record<string, unknown>): FieldRow[] {
  const rows: FieldRow[] = [];
  const walk = (path: string, node: Typed, depth: number) => {
    if (node.kind === "value") {
      rows.push({ path, depth, type: node.type, text: node.text });
      return;
    }
    const children: [string, Typed][] =
      node.kind === "object" ? node.fields : node.items.map((item, i) => [String(i), item]);
    const count = children.length;
    rows.push({
      path,
      depth,
      type: node.kind === "object" ? `Object (${count} field${count === 1 ? "" : "s"})` : `Array (${count})`,
      text: "",
    });
    for (const [name, child] of children) walk(`${path}.${name}`, child, depth + 1);
  };
  for (const [name, field] of Object.entries(document)) walk(name, typed(field), 0);
  return rows;
}

/** A short line for a list: the fields after `_id`, as `name: value`, cut at `max` characters. */
export function preview(document: Record<string, unknown>, max = 90): string {
  const parts: string[] = [];
  for (const [name, field] of Object.entries(document)) {
    if (name === "_id") continue;
    const node = typed(field);
    const text =
      node.kind === "value" ? node.text : node.kind === "array" ? `[${node.items.length}]` : `{${node.fields.length}}`;
    parts.push(`${name}: ${text}`);
  }
  const line = parts.join(" · ");
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** `_id` as a person reads it: `ObjectId 65a1…`, `String "a"`. */
export function idText(id: unknown): string {
  const node = typed(id);
  if (node.kind !== "value") return JSON.stringify(id);
  return node.type === "String" ? `"${node.text}"` : `${node.type} ${node.text}`;
}
