/** Both directions: every documented operation has a route, and every route is documented. */
import type { RouteOptions } from "fastify";
import { describe, expect, it } from "vitest";
import { operations } from "../src/openapi/operations.ts";
import { testApp } from "./helpers/app.ts";

async function routeTable() {
  const routes: { method: string; url: string; operationId: string | undefined }[] = [];
  const app = await testApp({
    onRoute: (route: RouteOptions) => {
      for (const method of [route.method].flat()) {
        routes.push({ method, url: route.url, operationId: route.config?.operationId });
      }
    },
  });
  await app.ready();
  await app.close();
  return routes;
}

describe("the routes and the documents", () => {
  it("give every documented operation a route with its method and path", async () => {
    const routes = await routeTable();
    const missing = [...operations.values()]
      .filter(
        (op) => !routes.some((r) => r.method === op.method && r.url === op.url && r.operationId === op.operationId),
      )
      .map((op) => `${op.operationId} ${op.method} ${op.url}`);
    expect(missing).toEqual([]);
  });

  it("document every route the emulator serves (CORS preflights and the inspector's pages aside)", async () => {
    const routes = await routeTable();
    const undocumented = routes.filter((r) => {
      if (r.method === "OPTIONS" || r.method === "HEAD") return false;
      if (r.url === "/_mock" || r.url === "/_mock/" || (r.url.startsWith("/_mock/") && !r.url.startsWith("/_mock/v1/")))
        return false;
      return r.operationId === undefined || !operations.has(r.operationId);
    });
    expect(undocumented).toEqual([]);
  });
});
