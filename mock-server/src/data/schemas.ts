/**
 * App Services collection schemas (`schema.json`, docs/decisions/0037-schemas.md): the BSON schema
 * every document a user's write leaves must satisfy — JSON Schema with `bsonType`, and `validate`
 * expressions over the document before and after the write. The errors are worded as the
 * service's Go validator words them ("(root): name is required", "age: Invalid type. Expected: …").
 *
 * Values are the store's (data/documents.ts): numbers are JS numbers, so an integral number may
 * have been sent as an int, a long or a double, and satisfies each of those types; an Int64 past
 * 2^53 is a Long, a Decimal128 a Decimal128.
 */
import { Binary, BSONRegExp, Decimal128, Long, ObjectId, Timestamp } from "bson";
import { type Expansions, ExpressionError, evaluate } from "../functions/can-evaluate.ts";
import { type Document, idKey, isDocument } from "./documents.ts";
import { compileRegex } from "./regex.ts";

export type Schema = Document;

/** A schema this server cannot evaluate (an unknown type or keyword): the namespace's writes are refused. */
export class UnsupportedSchema extends Error {}

/** How a validation runs: null for optional fields (the app's null type validation), and `validate`'s expansions. */
export interface SchemaCheck {
  /** Null passes an optional field's schema (App Services' "Null Type Schema Validation"). */
  nullable: boolean;
  /** The caller's expansions (`%%user`, `%%values`…) for `validate` expressions. */
  expansions: Expansions;
}

/** The BSON types (and JSON types) a value is, as the service lists them ("given: [...]"). */
export function typesOf(value: unknown): string[] {
  if (value === null) return ["null"];
  if (typeof value === "string") return ["string", "mixed"];
  if (typeof value === "boolean") return ["boolean", "bool", "mixed"];
  if (typeof value === "number") {
    if (!Number.isInteger(value)) return ["number", "double", "mixed"];
    return Math.abs(value) <= 2_147_483_647
      ? ["integer", "int", "long", "double", "number", "mixed"]
      : ["integer", "long", "double", "number", "mixed"];
  }
  if (value instanceof Timestamp) return ["timestamp", "mixed"];
  if (value instanceof Long) return ["integer", "long", "number", "mixed"];
  if (value instanceof Decimal128) return ["number", "decimal", "mixed"];
  if (value instanceof ObjectId) return ["objectId", "mixed"];
  if (value instanceof Date) return ["date", "mixed"];
  if (value instanceof Binary) return value.sub_type === 4 ? ["uuid", "binData", "mixed"] : ["binData", "mixed"];
  if (value instanceof BSONRegExp || value instanceof RegExp) return ["regex", "mixed"];
  if (Array.isArray(value)) return ["array"];
  if (isDocument(value)) return ["object"];
  const named = (value as { _bsontype?: unknown })._bsontype;
  return [typeof named === "string" ? named.charAt(0).toLowerCase() + named.slice(1) : "unknown", "mixed"];
}

const bsonTypes = new Set([
  "double",
  "string",
  "object",
  "array",
  "objectId",
  "date",
  "bool",
  "null",
  "regex",
  "int",
  "timestamp",
  "long",
  "decimal",
  "uuid",
  "binData",
  "mixed",
  "number",
  "javascript",
  "minKey",
  "maxKey",
]);
const jsonTypes = new Set(["object", "array", "number", "boolean", "string", "null"]);
/** Keywords that describe and never constrain. */
const annotations = new Set(["title", "description", "$schema", "$id", "default", "examples", "$comment"]);
const keywords = new Set([
  "bsonType",
  "type",
  "enum",
  "properties",
  "required",
  "additionalProperties",
  "patternProperties",
  "dependencies",
  "minProperties",
  "maxProperties",
  "items",
  "additionalItems",
  "minItems",
  "maxItems",
  "uniqueItems",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "multipleOf",
  "minLength",
  "maxLength",
  "pattern",
  "allOf",
  "anyOf",
  "oneOf",
  "not",
  "validate",
]);

const join = (path: string, key: string) => (path === "" ? key : `${path}.${key}`);
const list = (values: unknown[]) => values.map((v) => JSON.stringify(v)).join(", ");

function numberOf(value: unknown): number | undefined {
  if (typeof value === "number") return value;
  if (value instanceof Long && !(value instanceof Timestamp)) return value.toNumber();
  if (value instanceof Decimal128) return Number(value.toString());
  return undefined;
}

function typeNames(value: unknown, keyword: string, known: Set<string>): string[] {
  const names = Array.isArray(value) ? value : [value];
  for (const name of names) {
    if (typeof name !== "string" || !known.has(name))
      throw new UnsupportedSchema(`the ${keyword} ${JSON.stringify(name)}`);
  }
  return names as string[];
}

/** Whether a schema's `validate` expressions may read the document before the write (`%%prev`…). */
export function readsPrevious(schema: Schema): boolean {
  const text = JSON.stringify(schema);
  return text.includes("%%prev");
}

/** Where the document stood before the write, for `validate`'s `%%prev` and `%%prevRoot`. */
interface Around {
  root: Document;
  prevRoot: Document | undefined;
}

/**
 * The errors of `doc` against `schema` (none: it satisfies it). `before` is the document the
 * write changed (undefined for an insert). Throws UnsupportedSchema for what it cannot evaluate.
 */
export function schemaErrors(doc: Document, schema: Schema, check: SchemaCheck, before?: Document): string[] {
  const walk = new SchemaWalk(check, { root: doc, prevRoot: before });
  walk.value(doc, schema, "", before);
  return walk.errors;
}

/** One document's validation: what it found, each "field: what" (field "(root)" for the document). */
class SchemaWalk {
  readonly errors: string[] = [];

  constructor(
    private readonly check: SchemaCheck,
    private readonly around: Around,
  ) {}

  private add(path: string, what: string): void {
    this.errors.push(`${path === "" ? "(root)" : path}: ${what}`);
  }

  value(value: unknown, schema: unknown, path: string, previous: unknown): void {
    if (schema === true || schema === undefined) return;
    if (schema === false) {
      this.add(path, "False always fails validation");
      return;
    }
    if (!isDocument(schema)) throw new UnsupportedSchema(`a schema that is not an object at ${path || "(root)"}`);
    for (const key of Object.keys(schema)) {
      if (!keywords.has(key) && !annotations.has(key)) throw new UnsupportedSchema(`the keyword ${key}`);
    }
    const given = typesOf(value);
    if (schema.bsonType !== undefined || schema.type !== undefined) {
      const wanted = [
        ...(schema.bsonType === undefined ? [] : typeNames(schema.bsonType, "bsonType", bsonTypes)),
        ...(schema.type === undefined ? [] : typeNames(schema.type, "type", jsonTypes)),
      ];
      // ("number": any number; "mixed": any value but for the service's sets and embedded objects.)
      const fits = wanted.some(
        (name) => name === "mixed" || given.includes(name) || (name === "bool" && given.includes("boolean")),
      );
      if (!fits) {
        const shown = (v: unknown) =>
          v === undefined ? "undefined" : Array.isArray(v) ? `[${v.join(" ")}]` : String(v);
        this.add(
          path,
          `Invalid type. Expected: type: ${shown(schema.type)}, bsonType: ${shown(schema.bsonType)}, given: [${given.join(" ")}]`,
        );
        return;
      }
    }
    if (Array.isArray(schema.enum) && !schema.enum.some((one) => sameValue(one, value)))
      this.add(
        path,
        `${path === "" ? "(root)" : path.split(".").pop()} must be one of the following: ${list(schema.enum)}`,
      );
    const number = numberOf(value);
    if (number !== undefined) this.numbers(number, schema, path);
    if (typeof value === "string") this.strings(value, schema, path);
    if (Array.isArray(value)) this.array(value, schema, path, previous);
    if (isDocument(value)) this.object(value, schema, path, previous);
    for (const keyword of ["allOf", "anyOf", "oneOf"] as const) {
      if (schema[keyword] === undefined) continue;
      if (!Array.isArray(schema[keyword])) throw new UnsupportedSchema(`${keyword} that is not a list`);
      const passing = (schema[keyword] as unknown[]).filter((one) => this.passes(value, one, path, previous));
      const count = (schema[keyword] as unknown[]).length;
      if (keyword === "allOf" && passing.length < count) this.add(path, "Must validate all the schemas (allOf)");
      if (keyword === "anyOf" && passing.length === 0) this.add(path, "Must validate at least one schema (anyOf)");
      if (keyword === "oneOf" && passing.length !== 1) this.add(path, "Must validate one and only one schema (oneOf)");
    }
    if (schema.not !== undefined && this.passes(value, schema.not, path, previous))
      this.add(path, "Must not validate the schema (not)");
    if (schema.validate !== undefined) this.expression(value, schema.validate, path, previous);
  }

  private passes(value: unknown, schema: unknown, path: string, previous: unknown): boolean {
    const inner = new SchemaWalk(this.check, this.around);
    inner.value(value, schema, path, previous);
    return inner.errors.length === 0;
  }

  private numbers(value: number, schema: Document, path: string): void {
    const bound = (name: string) => {
      const limit = schema[name];
      if (limit === undefined) return undefined;
      if (typeof limit !== "number") throw new UnsupportedSchema(`${name} that is not a number`);
      return limit;
    };
    const minimum = bound("minimum");
    const maximum = bound("maximum");
    const multipleOf = bound("multipleOf");
    if (minimum !== undefined) {
      if (schema.exclusiveMinimum === true ? value <= minimum : value < minimum)
        this.add(
          path,
          schema.exclusiveMinimum === true
            ? `Must be greater than ${minimum}`
            : `Must be greater than or equal to ${minimum}`,
        );
    }
    if (maximum !== undefined) {
      if (schema.exclusiveMaximum === true ? value >= maximum : value > maximum)
        this.add(
          path,
          schema.exclusiveMaximum === true
            ? `Must be less than ${maximum}`
            : `Must be less than or equal to ${maximum}`,
        );
    }
    if (multipleOf !== undefined && multipleOf > 0) {
      const ratio = value / multipleOf;
      if (Math.abs(ratio - Math.round(ratio)) > 1e-9) this.add(path, `Must be a multiple of ${multipleOf}`);
    }
  }

  private strings(value: string, schema: Document, path: string): void {
    // (Lengths in code points, as JSON Schema counts them.)
    const length = schema.minLength !== undefined || schema.maxLength !== undefined ? [...value].length : 0;
    if (typeof schema.minLength === "number" && length < schema.minLength)
      this.add(path, `String length must be greater than or equal to ${schema.minLength}`);
    if (typeof schema.maxLength === "number" && length > schema.maxLength)
      this.add(path, `String length must be less than or equal to ${schema.maxLength}`);
    if (schema.pattern !== undefined) {
      if (typeof schema.pattern !== "string") throw new UnsupportedSchema("a pattern that is not a string");
      if (!pattern(schema.pattern).test(value)) this.add(path, `Does not match pattern '${schema.pattern}'`);
    }
  }

  private array(value: unknown[], schema: Document, path: string, previous: unknown): void {
    if (typeof schema.minItems === "number" && value.length < schema.minItems)
      this.add(path, `Array must have at least ${schema.minItems} items`);
    if (typeof schema.maxItems === "number" && value.length > schema.maxItems)
      this.add(path, `Array must have at most ${schema.maxItems} items`);
    if (schema.uniqueItems === true) {
      const seen = new Map<string, number>();
      for (const [i, item] of value.entries()) {
        const key = typeof item === "number" ? `n:${item}` : idKey(item);
        const first = seen.get(key);
        if (first !== undefined) {
          this.add(path, `array items[${first},${i}] must be unique`);
          break;
        }
        seen.set(key, i);
      }
    }
    const before = Array.isArray(previous) ? previous : [];
    const items = schema.items;
    if (Array.isArray(items)) {
      for (const [i, item] of value.entries()) {
        const each = i < items.length ? items[i] : schema.additionalItems;
        if (each === false) {
          this.add(path, `Array must have at most ${items.length} items`);
          break;
        }
        this.value(item, each, join(path, String(i)), before[i]);
      }
    } else if (items !== undefined) {
      for (const [i, item] of value.entries()) this.value(item, items, join(path, String(i)), before[i]);
    }
  }

  private object(value: Document, schema: Document, path: string, previous: unknown): void {
    const keys = Object.keys(value);
    const required = Array.isArray(schema.required) ? (schema.required as unknown[]) : [];
    for (const name of required) {
      if (typeof name === "string" && value[name] === undefined) this.add(path, `${name} is required`);
    }
    if (typeof schema.minProperties === "number" && keys.length < schema.minProperties)
      this.add(path, `Must have at least ${schema.minProperties} properties`);
    if (typeof schema.maxProperties === "number" && keys.length > schema.maxProperties)
      this.add(path, `Must have at most ${schema.maxProperties} properties`);
    const properties = isDocument(schema.properties) ? schema.properties : {};
    const patterns = isDocument(schema.patternProperties)
      ? Object.entries(schema.patternProperties).map(([source, each]) => ({ re: pattern(source), each }))
      : [];
    const before = isDocument(previous) ? previous : {};
    for (const key of keys) {
      const item = value[key];
      const at = join(path, key);
      // An optional field may hold null when the app validates null types so (a required one never).
      if (item === null && this.check.nullable && !required.includes(key)) continue;
      let described = false;
      if (Object.hasOwn(properties, key)) {
        described = true;
        this.value(item, properties[key], at, before[key]);
      }
      for (const { re, each } of patterns) {
        if (!re.test(key)) continue;
        described = true;
        this.value(item, each, at, before[key]);
      }
      if (described) continue;
      if (schema.additionalProperties === false) this.add(path, `Additional property ${key} is not allowed`);
      else if (isDocument(schema.additionalProperties)) this.value(item, schema.additionalProperties, at, before[key]);
    }
    if (isDocument(schema.dependencies)) {
      for (const [key, dependency] of Object.entries(schema.dependencies)) {
        if (value[key] === undefined) continue;
        if (Array.isArray(dependency)) {
          for (const needed of dependency) {
            if (typeof needed === "string" && value[needed] === undefined)
              this.add(path, `Has a dependency on ${needed}`);
          }
        } else if (!this.passes(value, dependency, path, previous)) {
          this.add(path, `Has a dependency on ${key}`);
        }
      }
    }
  }

  /**
   * `validate`: an App Services expression over the value (`%%this`), its value before the write
   * (`%%prev`), the document (`%%root`) and the document before (`%%prevRoot`), with the caller's
   * expansions.
   */
  private expression(value: unknown, expression: unknown, path: string, previous: unknown): void {
    let holds: boolean;
    try {
      holds = evaluate(expression, {
        ...this.check.expansions,
        document: { this: value, prev: previous, root: this.around.root, prevRoot: this.around.prevRoot },
      });
    } catch (error) {
      if (error instanceof ExpressionError)
        throw new UnsupportedSchema(`the validate expression at ${path || "(root)"}: ${error.message}`);
      throw error;
    }
    if (!holds) this.add(path, "does not satisfy its validate expression");
  }
}

function sameValue(a: unknown, b: unknown): boolean {
  if (typeof a === "number" || typeof b === "number") return numberOf(a) !== undefined && numberOf(a) === numberOf(b);
  try {
    return idKey(a) === idKey(b);
  } catch {
    return false;
  }
}

/** A schema's pattern on the linear-time engine (a pattern it cannot run is refused). */
function pattern(source: string) {
  try {
    return compileRegex(source, "");
  } catch (error) {
    throw new UnsupportedSchema(`the pattern '${source}': ${(error as Error).message}`);
  }
}
