/**
 * A `$fill` specification checked as MongoDB's parser checks it (document_source_fill.cpp; the
 * stage itself is window-stage.ts' `fillStage`).
 */
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { isDocument } from "./documents.ts";
import { keysOf } from "./wide-keys.ts";

const fillFields = new Set(["sortBy", "partitionBy", "partitionByFields", "output"]);

/** A `$fill` specification refused as MongoDB's parser refuses it (its codes; the texts are ours where no test names them). */
export function checkFill(spec: unknown): void {
  if (!isDocument(spec)) throw errors.mongo("the $fill stage specification must be an object");
  for (const key of keysOf(spec))
    if (!fillFields.has(key)) throw errors.mongo(`BSON field '$fill.${key}' is an unknown field.`);
  const { output, sortBy, partitionBy, partitionByFields } = spec;
  if (output === undefined) throw errors.mongo("BSON field '$fill.output' is missing but a required field");
  if (!isDocument(output)) throw errors.mongo("BSON field '$fill.output' is the wrong type, expected type 'object'");
  if (keysOf(output).length === 0) throw errors.mongo("$fill 'output' must name at least one field to fill");
  if (partitionBy !== undefined && partitionByFields !== undefined)
    throw errors.mongo("Maximum one of 'partitionBy' and 'partitionByFields can be specified in '$fill'");
  if (partitionByFields !== undefined) {
    if (!Array.isArray(partitionByFields) || !partitionByFields.every((field) => typeof field === "string"))
      throw errors.mongo("BSON field '$fill.partitionByFields' must be an array of field names");
    if (partitionByFields.some((field) => field.startsWith("$")))
      throw errors.mongo("FieldPath field names may not start with '$'. Consider using $getField or $setField.");
  }
  if (sortBy !== undefined && !isDocument(sortBy)) throw errors.mongo("BSON field '$fill.sortBy' must be an object");
  for (const field of keysOf(output)) {
    const fill = output[field];
    if (!isDocument(fill)) throw errors.mongo("Each fill output specification must be an object");
    for (const key of keysOf(fill))
      if (key !== "method" && key !== "value")
        throw errors.mongo(`BSON field '$fill.output.${field}.${key}' is an unknown field.`);
    if ("method" in fill === "value" in fill)
      throw errors.mongo("Each fill output specification must have exactly one of 'method' or 'value' fields");
    if ("method" in fill) {
      if (fill.method !== "locf" && fill.method !== "linear")
        throw errors.mongo("Method must be either locf or linear");
      if (fill.method === "linear" && sortBy === undefined)
        throw errors.mongo("'sortBy' is required for a $fill with the 'linear' method");
    }
  }
}
