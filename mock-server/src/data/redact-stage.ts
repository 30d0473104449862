/**
 * `$redact` as MongoDB's DocumentSourceRedact runs it: the expression decides each document, then
 * (`$$DESCEND`) each embedded document, in fields and in arrays, arrays in arrays too; `$$PRUNE`
 * drops it (a pruned top-level document leaves the output), `$$KEEP` keeps it whole, and any
 * other answer is MongoDB's error 17053. mingo's descended only for an expression written as
 * `$cond`, did not go into arrays in arrays, answered `undefined` for a pruned document and
 * passed any other answer on as the document. Field paths read the document being decided (as
 * `$$CURRENT` does in MongoDB; `$$ROOT` is that document here too).
 */
import { evalExpr } from "mingo/core";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { computeOptionsClass } from "./accumulators.ts";
import { type Document, isDocument } from "./documents.ts";
import { step } from "./query-limits.ts";
import { shellText } from "./shell-text.ts";
import { keysOf } from "./wide-keys.ts";

// biome-ignore lint/suspicious/noExplicitAny: mingo's operator signatures vary by kind
type AnyFn = (...args: any[]) => any;

export const redactStage: AnyFn = (collection, expr, options) => {
  const make = computeOptionsClass(options);
  const decide = (doc: Document): unknown => {
    step();
    const local = make ? make.init(options).update({ root: doc }) : options;
    return evalExpr(doc, expr, local as never);
  };
  const redactValue = (value: unknown): unknown => {
    if (isDocument(value)) return redactObject(value);
    if (!Array.isArray(value)) return value;
    const out: unknown[] = [];
    for (const element of value) {
      const kept = isDocument(element) || Array.isArray(element) ? redactValue(element) : element;
      if (kept !== undefined) out.push(kept);
    }
    return out;
  };
  const redactObject = (doc: Document): Document | undefined => {
    const action = decide(doc);
    if (action === "$$KEEP") return doc;
    if (action === "$$PRUNE") return undefined;
    if (action !== "$$DESCEND")
      throw errors.mongo(
        `$redact's expression should not return anything aside from the variables $$KEEP, $$DESCEND, and $$PRUNE, but returned ${shellText(action)}`,
      );
    const out: Document = {};
    for (const key of keysOf(doc)) {
      const value = redactValue(doc[key]);
      if (value !== undefined) out[key] = value;
    }
    return out;
  };
  return (collection as { map(f: (doc: unknown) => unknown): { filter(f: (doc: unknown) => boolean): unknown } })
    .map((doc) => redactObject(doc as Document))
    .filter((doc) => doc !== undefined);
};
