/** Shared by the document routes: Extended JSON from a control request, and MongoDB errors as control errors. */
import { type Document, fromEJSON, isDocument } from "../data/documents.ts";
import { strictFormProblem } from "../data/strict-forms.ts";
import { AppServicesError, controlErrors } from "../errors/catalogue.ts";

/** A query or a document given as Extended JSON (canonical or relaxed), as BSON-typed values. */
export function documentOf(value: unknown, what: string): Document {
  let parsed: unknown;
  try {
    const problem = strictFormProblem(value);
    if (problem !== null) throw new Error(problem);
    parsed = fromEJSON(value);
  } catch (error) {
    throw controlErrors.validation(`${what}: invalid Extended JSON: ${(error as Error).message}`);
  }
  if (!isDocument(parsed)) throw controlErrors.validation(`${what} must be a document`);
  return parsed;
}

/** Runs a system action; what MongoDB would refuse (a bad query, an altered `_id`) is the control API's 400. */
export async function asControl<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof AppServicesError) {
      // A duplicate `_id`, or the app's document or collection limits (docs/decisions/0012-quotas.md): a conflict.
      throw /^Duplicate key|^maximum (number|size) of documents|^cannot create a new collection/.test(error.message)
        ? controlErrors.conflict(error.message)
        : controlErrors.validation(error.message);
    }
    throw error;
  }
}
