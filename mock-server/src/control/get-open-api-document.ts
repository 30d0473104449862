import { type DocumentName, documents } from "@harness/openapi/documents";
import { controlErrors } from "../errors/catalogue.ts";
import { defineControlRoute } from "./route.ts";

export default defineControlRoute("getOpenApiDocument", async (request) => {
  const name = request.params.document;
  if (!Object.hasOwn(documents, name))
    throw controlErrors.notFound(`no document '${name}' (app-services, emailjs or mock-control)`);
  return documents[name as DocumentName];
});
