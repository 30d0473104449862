/**
 * Whether an expression has one value whatever the document: no field path and no `$$ROOT` or
 * `$$CURRENT` (other variables are bound to constants where MongoDB asks for one), `$literal` and
 * `$const` as written. A `$percentile`'s `p` and a `$shift`'s `default` must be such.
 */
import { isDocument } from "./documents.ts";
import { keysOf } from "./wide-keys.ts";

export function isConstantExpression(expr: unknown): boolean {
  if (typeof expr === "string")
    return !expr.startsWith("$") || (expr.startsWith("$$") && !/^\$\$(ROOT|CURRENT)\b/.test(expr));
  if (Array.isArray(expr)) return expr.every(isConstantExpression);
  if (isDocument(expr))
    return keysOf(expr).every((key) => key === "$literal" || key === "$const" || isConstantExpression(expr[key]));
  return true;
}
