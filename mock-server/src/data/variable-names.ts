/**
 * The names a pipeline may give its variables, as MongoDB checks them
 * (`Variables::uassertValidNameForUserWrite`): `$let`'s `vars`, `$map`'s and `$filter`'s `as`,
 * `$lookup`'s `let`. A lowercase letter or a non-ASCII character first, then letters, digits, `_`
 * or non-ASCII characters; `CURRENT` may be rebound. mingo took any name, so `{as: "Item"}` or a
 * `$lookup` variable named after a field (`"sub-id"`) ran here and is refused by MongoDB.
 */
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { isDocument } from "./documents.ts";
import { keysOf } from "./wide-keys.ts";

// biome-ignore lint/suspicious/noExplicitAny: mingo's operator signature.
type AnyFn = (...args: any[]) => any;

const lowercase = (code: number) => code >= 0x61 && code <= 0x7a;
const nonAscii = (code: number) => code >= 0x80;
const inName = (code: number) =>
  lowercase(code) ||
  (code >= 0x41 && code <= 0x5a) ||
  (code >= 0x30 && code <= 0x39) ||
  code === 0x5f ||
  nonAscii(code);

/** Refuses a variable name a pipeline may not define, with MongoDB's text. */
export function checkVariableName(name: string): void {
  if (name === "CURRENT") return;
  if (name === "") throw errors.mongo("empty variable names are not allowed");
  const first = name.charCodeAt(0);
  if (!lowercase(first) && !nonAscii(first))
    throw errors.mongo(`'${name}' starts with an invalid character for a user variable name`);
  for (let i = 1; i < name.length; i++)
    if (!inName(name.charCodeAt(i)))
      throw errors.mongo(`'${name}' contains an invalid character for a variable name: '${name[i]}'`);
}

/** `operator` with the name its `as` gives checked first (`$map`, `$filter`). */
function checkingAs(operator: AnyFn): AnyFn {
  return (obj, expr, options) => {
    if (isDocument(expr) && typeof expr.as === "string") checkVariableName(expr.as);
    return operator(obj, expr, options);
  };
}

/** `$let` with the names of its `vars` checked first. */
function checkingVars(operator: AnyFn): AnyFn {
  return (obj, expr, options) => {
    if (isDocument(expr) && isDocument(expr.vars)) for (const name of keysOf(expr.vars)) checkVariableName(name);
    return operator(obj, expr, options);
  };
}

/** `operators` with `$let`, `$map` and `$filter` refusing the names MongoDB refuses. */
export function withVariableNames(operators: Record<string, AnyFn>): Record<string, AnyFn> {
  const out = { ...operators };
  if (operators.$let) out.$let = checkingVars(operators.$let);
  for (const name of ["$map", "$filter"]) if (operators[name]) out[name] = checkingAs(operators[name]);
  return out;
}
