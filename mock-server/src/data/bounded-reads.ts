/**
 * Reads bounded in time and in documents (docs/decisions/0018-fair-shares.md). An action reads the
 * store's batches (DocumentStore.scan) one after another and between two of them:
 *
 * - checks its deadline (MongoDB's "operation exceeded time limit"), so a read of many documents
 *   ends at the deadline instead of after decoding all of them;
 * - counts the documents examined against the app's `queryDocsExaminedLimit`;
 * - lets other requests run once it has held the event loop for a few milliseconds;
 * - stops as soon as it has what it needs: the first `want` matches in natural order, or, for a
 *   sort, the best `want` so far kept (never more than twice that at once).
 *
 * What is done with each batch (the query engine's match, its sort) is the caller's: it runs under
 * the action's query limits.
 */
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import type { Document } from "./documents.ts";
import { Turns } from "./turns.ts";

/** What one action may still spend on reading. */
export interface ReadBudget {
  /** performance.now() past which the action answers the time-limit error. */
  deadline: number;
  /** Documents the action may examine in all (every collection it reads). */
  maxExamined: number;
  examined: number;
}

/** The batches of a read, checked against the budget between them (see above). */
export async function* bounded(batches: AsyncIterable<Document[]>, budget: ReadBudget): AsyncGenerator<Document[]> {
  const turns = new Turns();
  for await (const batch of batches) {
    budget.examined += batch.length;
    if (budget.examined > budget.maxExamined) throw errors.docsExaminedLimit(budget.maxExamined);
    if (performance.now() > budget.deadline) throw errors.queryTimeLimit();
    yield batch;
    await turns.maybe();
  }
}

/** Keeps the documents of a batch that match (the caller's query, under its limits). */
export type Matcher = (docs: Document[]) => Document[];

/** The first `want` matching documents, natural order; reads no further once it has them. */
export async function firstMatches(
  batches: AsyncIterable<Document[]>,
  match: Matcher,
  want: number,
): Promise<Document[]> {
  const found: Document[] = [];
  for await (const batch of batches) {
    for (const doc of match(batch)) {
      found.push(doc);
      if (found.length >= want) return found;
    }
  }
  return found;
}

/** Every matching document. */
export async function allMatches(batches: AsyncIterable<Document[]>, match: Matcher): Promise<Document[]> {
  const found: Document[] = [];
  for await (const batch of batches) for (const doc of match(batch)) found.push(doc);
  return found;
}

/** How many documents match, up to `limit`. */
export async function countMatches(
  batches: AsyncIterable<Document[]>,
  match: Matcher,
  limit?: number,
): Promise<number> {
  let n = 0;
  for await (const batch of batches) {
    n += match(batch).length;
    if (limit !== undefined && n >= limit) return limit;
  }
  return n;
}

/**
 * The best `want` matching documents by a sort (`top`: the caller's sort of some documents, cut to
 * `want`, stable: ties keep their natural order); holds at most twice `want`. Not necessarily in
 * order (when all of them fit they come in natural order): the caller sorts what it gets.
 */
export async function bestMatches(
  batches: AsyncIterable<Document[]>,
  match: Matcher,
  want: number,
  top: (docs: Document[], want: number) => Document[],
): Promise<Document[]> {
  let kept: Document[] = [];
  for await (const batch of batches) {
    for (const doc of match(batch)) kept.push(doc);
    if (kept.length >= 2 * want) kept = top(kept, want);
  }
  return kept.length > want ? top(kept, want) : kept;
}
