import { controlErrors } from "../errors/catalogue.ts";
import { AppExistsError } from "../runtime/apps.ts";
import { checkFunctionSource } from "./function-source.ts";
import { defineControlRoute } from "./route.ts";

/** A fresh app from the default template, with the request's config overrides deep-merged. */
export default defineControlRoute("createApp", async (request, reply) => {
  const { apps } = request.server.emulator;
  const body = request.body ?? {};
  await checkFunctionSource(request.server.emulator, { apps: [{ config: body.config }] });
  try {
    const app = await apps.create({
      ...(body.appId ? { appId: body.appId } : {}),
      ...(body.config ? { overrides: body.config } : {}),
    });
    return reply.code(201).send({ appId: app.appId });
  } catch (error) {
    if (error instanceof AppExistsError) throw controlErrors.conflict(error.message);
    throw error;
  }
});
