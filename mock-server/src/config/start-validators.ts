/**
 * The validators a start needs before it serves: a `--config` file's (the control document's
 * EmulatorConfigFile) and kept state's (State: `--data-dir`, and the control API's import).
 * Compiling them was a third of a start with both (~170 ms of ~540 ms to the first answer), so
 * the bundle carries them precompiled: scripts/build.mjs replaces this module with Ajv's
 * standalone code of the same schemas, made by the same `createAjv` (`standaloneSource`). Run
 * from the sources, each is compiled on its first use.
 */
import { documents } from "@harness/openapi/documents";
import standaloneCode from "ajv/dist/standalone/index.js";
import { createAjv } from "../http/validation.ts";

const schemas = (documents["mock-control"].components as { schemas: Record<string, object> }).schemas;
const startSchemas = { configFile: schemas.EmulatorConfigFile!, state: schemas.State! };

export type StartValidatorName = keyof typeof startSchemas;

export interface StartValidator {
  (value: unknown): boolean;
  errors?: { instancePath: string; message?: string }[] | null;
}

const compiled: Partial<Record<StartValidatorName, StartValidator>> = {};

/** The validator of `name`, compiled once per process (in the bundle: at build time). */
export function startValidator(name: StartValidatorName): StartValidator {
  compiled[name] ??= createAjv().compile(startSchemas[name]);
  return compiled[name];
}

/**
 * The module that replaces this one in the bundle: Ajv's standalone code of every start
 * validator, exported under its name (its formats and Ajv's runtime helpers are `require`d).
 */
export function standaloneSource(): string {
  const ajv = createAjv(false, { standalone: true });
  for (const [name, schema] of Object.entries(startSchemas)) ajv.addSchema(schema, name);
  const names = Object.fromEntries(Object.keys(startSchemas).map((name) => [name, name]));
  return `${standaloneCode(ajv, names)}
const validators = { ${Object.keys(names).join(", ")} };
export const startValidator = (name) => validators[name];
`;
}
