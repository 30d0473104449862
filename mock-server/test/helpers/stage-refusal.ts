/** A stage's specification as MongoDB's parser takes it: "accepted", or the refusal's text. */
import type { Document } from "../../src/data/documents.ts";
import { checkAggregation } from "../../src/data/query-engine.ts";

export function stageRefusal(stage: string, spec: unknown): string {
  try {
    checkAggregation([{ [stage]: spec } as Document]);
    return "accepted";
  } catch (error) {
    return (error as Error).message;
  }
}
