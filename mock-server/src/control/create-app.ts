import { controlErrors } from "../errors/catalogue.ts";
import { defineControlRoute } from "./route.ts";

/** A fresh app from the default template, with the request's config overrides deep-merged. */
export default defineControlRoute("createApp", async (request, reply) => {
  const { apps } = request.server.emulator;
  const body = request.body ?? {};
  if (body.appId !== undefined && apps.has(body.appId))
    throw controlErrors.conflict(`an app with id '${body.appId}' exists`);
  const app = apps.create({
    ...(body.appId ? { appId: body.appId } : {}),
    ...(body.config ? { overrides: body.config } : {}),
  });
  return reply.code(201).send({ appId: app.appId });
});
