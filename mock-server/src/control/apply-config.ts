import { AppFolderError, applyConfigFile, repeatedId } from "../config/config-file.ts";
import { controlErrors } from "../errors/catalogue.ts";
import { AppExistsError } from "../runtime/apps.ts";
import { EmailJsAccountExistsError } from "../runtime/emailjs-accounts.ts";
import { checkFunctionSource } from "./function-source.ts";
import { defineControlRoute } from "./route.ts";

/** What `--config FILE` does at start, at run time (settings excepted). */
export default defineControlRoute("applyConfig", async (request, reply) => {
  if (request.body.settings !== undefined)
    throw controlErrors.validation("settings take effect only at start (--config)");
  const repeated = repeatedId(request.body);
  if (repeated) throw controlErrors.validation(repeated);
  await checkFunctionSource(request.server.emulator, { apps: request.body.apps ?? [], baseDir: process.cwd() });
  try {
    const created = await applyConfigFile(request.server.emulator, request.body, process.cwd(), "create");
    return reply.code(201).send(created);
  } catch (error) {
    if (error instanceof AppExistsError || error instanceof EmailJsAccountExistsError)
      throw controlErrors.conflict(error.message);
    if (error instanceof AppFolderError) throw controlErrors.validation(error.message);
    // (An outage answers 503, as everywhere.)
    throw error;
  }
});
