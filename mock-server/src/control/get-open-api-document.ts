import { documents } from "@harness/openapi/documents";
import { defineControlRoute } from "./route.ts";

export default defineControlRoute("getOpenApiDocument", async (request) => documents[request.params.document]);
