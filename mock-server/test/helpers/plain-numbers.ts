/** Canonical Extended JSON of a value with the numbers of the given wrappers written as plain numbers. */
import { toEJSON } from "../../src/data/documents.ts";

type NumberWrapper = "$numberInt" | "$numberDouble";

export function plainNumbers(value: unknown, wrappers: NumberWrapper[] = ["$numberInt"]): any {
  return JSON.parse(JSON.stringify(toEJSON(value as never)), (_key, node) => {
    for (const wrapper of wrappers) if (node?.[wrapper] !== undefined) return Number(node[wrapper]);
    return node;
  });
}
