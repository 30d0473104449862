/**
 * Runs the app's confirmation or reset function (`runConfirmationFunction` / `runResetFunction`)
 * and reads its `{status: "success" | "pending" | "fail"}` answer, as the service does.
 */

import { appServicesErrors as errors } from "../../errors/catalogue.ts";
import type { AppRuntime } from "../../runtime/app-runtime.ts";

export type FunctionStatus = "success" | "pending" | "fail";

export async function runStatusFunction(
  app: AppRuntime,
  name: string | undefined,
  args: unknown[],
): Promise<FunctionStatus> {
  if (!name) throw errors.functionNotFound("");
  const result = await app.functions.run(name, args, { user: null, system: true });
  const status = (result as { status?: unknown } | null)?.status;
  return status === "success" || status === "pending" ? status : "fail";
}
