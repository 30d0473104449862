/**
 * A MongoDB action's `collation` option read and checked as MongoDB checks it (collation.ts
 * applies it). A system function's CRUD and aggregation calls may pass one; App Services keeps the
 * option from the user context (its CRUD and aggregation reference), and so does this server.
 * See docs/decisions/0055-collations.md.
 */
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { bsonTypeAlias } from "./bson-order.ts";
import { bcp47Locale, type CollationSpec, icuLocale } from "./collation.ts";
import { type Document, isDocument } from "./documents.ts";
import { doubleOf, isNumeric } from "./numeric-operators.ts";
import { shellText } from "./shell-text.ts";
import { hasNoKeys } from "./wide-keys.ts";

/**
 * The actions that take a collation (an insert takes none: the driver sends none), each as the
 * MongoDB command its `collation` field's refusals name (`find` and `findOne`: see `collationOf`).
 */
const commandOf: Record<string, string> = {
  count: "count",
  aggregate: "aggregate",
  updateOne: "update.updates",
  updateMany: "update.updates",
  replaceOne: "update.updates",
  deleteOne: "delete.deletes",
  deleteMany: "delete.deletes",
  findOneAndUpdate: "findAndModify",
  findOneAndReplace: "findAndModify",
  findOneAndDelete: "findAndModify",
};

/**
 * An action's collation: undefined when it has none (an empty one is none), its locale is
 * `simple` (code points), or the action takes none; refused to an app user, and where MongoDB
 * refuses the spec, in its words (its IDL parser's, then its collator factory's).
 */
export function collationOf(action: string, args: Document, user: boolean): CollationSpec | undefined {
  const value = args.collation;
  const find = action === "find" || action === "findOne";
  // (A null option is none, as the driver leaves it out.)
  if (value === undefined || value === null || !(find || Object.hasOwn(commandOf, action))) return undefined;
  if (user) throw errors.mongo("collation is not allowed in this context");
  if (!isDocument(value))
    throw errors.mongo(
      find
        ? "Expected field collationto be of type object"
        : `BSON field '${commandOf[action]}.collation' is the wrong type '${bsonTypeAlias(value)}', expected type 'object'`,
    );
  return hasNoKeys(value) ? undefined : parseCollation(value);
}

/** The spec's fields, each with the type MongoDB's IDL gives it. */
const fields: Record<string, "string" | "bool" | "number" | "enum" | "optionalBool"> = {
  locale: "string",
  caseLevel: "bool",
  caseFirst: "enum",
  strength: "number",
  numericOrdering: "bool",
  alternate: "enum",
  maxVariable: "enum",
  normalization: "bool",
  backwards: "optionalBool",
  version: "string",
};

const choices: Record<string, string[]> = {
  caseFirst: ["upper", "lower", "off"],
  alternate: ["non-ignorable", "shifted"],
  maxVariable: ["punct", "space"],
};

/** The collator version MongoDB's servers report (their ICU's). */
export const collatorVersion = "57.1";

/**
 * A collation spec checked as MongoDB checks it: field by field in their order (its IDL parser:
 * unknown fields, types, enumerations, the strength's range), then the locale, the version and the
 * options' combinations with the locale's defaults. Undefined for `locale: "simple"`.
 */
export function parseCollation(spec: Document): CollationSpec | undefined {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(spec)) {
    const kind = fields[name];
    if (kind === undefined) throw errors.mongo(`BSON field 'collation.${name}' is an unknown field.`);
    if (kind === "optionalBool") {
      if (typeof value !== "boolean")
        throw errors.mongo(`Field '${name}' should be a boolean value, but found: ${bsonTypeAlias(value)}`);
      out[name] = value;
      continue;
    }
    // (The IDL parser passes over null and undefined: the field keeps its default.)
    if (value === null || value === undefined) continue;
    if (kind === "number") {
      if (!isNumeric(value))
        throw errors.mongo(
          `BSON field 'collation.${name}' is the wrong type '${bsonTypeAlias(value)}', expected types '[long, int, decimal, double]'`,
        );
      out[name] = safeInt(value);
      continue;
    }
    const expected = kind === "bool" ? "bool" : "string";
    if (typeof value !== (kind === "bool" ? "boolean" : "string"))
      throw errors.mongo(
        `BSON field 'collation.${name}' is the wrong type '${bsonTypeAlias(value)}', expected type '${expected}'`,
      );
    if (kind === "enum" && !choices[name]!.includes(value as string))
      throw errors.mongo(`Enumeration value '${value}' for field 'collation.${name}' is not a valid value.`);
    out[name] = value;
  }
  const strength = out.strength as number | undefined;
  if (strength !== undefined && strength > 5)
    throw errors.mongo(`BSON field 'collation.strength' value must be <= 5, actual value '${strength}'`);
  if (strength !== undefined && strength < 0)
    throw errors.mongo(`BSON field 'collation.strength' value must be >= 0, actual value '${strength}'`);
  const locale = out.locale as string | undefined;
  if (locale === undefined) throw errors.mongo("BSON field 'collation.locale' is missing but a required field");
  if (locale.includes("\u0000"))
    throw errors.mongo(`Field 'locale' cannot contain null byte. Collation spec: ${shellText(spec)}`);
  if (locale === "simple") return undefined;
  if (locale === "") throw errors.mongo(`Field 'locale' cannot be the empty string in: ${shellText(spec)}`);
  const valid = validLocale(locale);
  if (valid !== locale)
    throw errors.mongo(
      `Field 'locale' is invalid in: ${shellText(spec)}${valid === undefined ? "" : `. Did you mean '${valid}'?`}`,
    );
  if (strength === 0) throw errors.mongo("Enumeration value '0' for field 'collation.strength' is not a valid value.");
  if (out.version !== undefined && out.version !== collatorVersion)
    throw errors.mongo(
      `Requested collation version ${out.version} but the only available collator version was ${collatorVersion}. Requested collation spec: ${shellText(spec)}`,
    );
  const defaults = localeDefaults(locale);
  const level = strength ?? 3;
  if ((out.backwards ?? defaults.backwards) === true && level === 1)
    throw errors.mongo(`'backwards' is invalid with 'strength' of 1 in: ${shellText(spec)}`);
  if ((out.caseFirst ?? defaults.caseFirst) !== "off" && out.caseLevel !== true && level <= 2)
    throw errors.mongo(
      `'caseFirst' is invalid unless 'caseLevel' is on or 'strength' is greater than 2 in: ${shellText(spec)}`,
    );
  // What ICU would do but JavaScript's collator cannot be told (decision 0055): refused, not passed over.
  const cannot = (what: string) => errors.mongo(`the collation option ${what} is not supported by this server`);
  if (out.backwards !== undefined && out.backwards !== defaults.backwards)
    throw cannot(
      `'backwards: ${out.backwards}' (locale '${locale}' orders accents ${defaults.backwards ? "backwards" : "forwards"})`,
    );
  if (out.maxVariable === "space" && out.alternate === "shifted") throw cannot("'maxVariable: \"space\"'");
  if (out.caseLevel === true && level >= 2) throw cannot("'caseLevel: true' above strength 1");
  return out as unknown as CollationSpec;
}

/** A number as MongoDB's `safeNumberInt` reads it: doubles truncated toward zero, NaN as 0. */
function safeInt(value: unknown): number {
  const n = Math.trunc(doubleOf(value));
  if (Number.isNaN(n)) return 0;
  return Math.max(-(2 ** 31), Math.min(2 ** 31 - 1, n));
}

/**
 * What ICU sets per locale that the spec's checks read: French Canadian orders accents from the
 * end of the word, Danish and Maltese put capitals first.
 */
function localeDefaults(locale: string): { backwards: boolean; caseFirst: "upper" | "off" } {
  const language = locale.split(/[_@]/, 1)[0]!;
  return {
    backwards: locale === "fr_CA" || locale.startsWith("fr_CA@"),
    caseFirst: language === "da" || language === "mt" ? "upper" : "off",
  };
}

/**
 * The locale ICU has a collator for, in ICU's spelling, for the locale asked: MongoDB takes the
 * locale only when the two are the same (`en_US`, `de@collation=phonebook`); otherwise it names
 * the one found (`en` for `en_XX`), or none when there is none but the root's.
 */
function validLocale(locale: string): string | undefined {
  if (/[^A-Za-z0-9_@=;]/.test(locale)) return undefined;
  try {
    const asked = bcp47Locale(locale);
    if (Intl.Collator.supportedLocalesOf([asked]).length === 0) return undefined;
    return icuLocale(new Intl.Collator(asked).resolvedOptions().locale);
  } catch {
    return undefined;
  }
}
