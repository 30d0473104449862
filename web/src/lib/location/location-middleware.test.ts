import { createAppServicesClient } from "@harness/openapi/app-services";
import { describe, expect, it } from "vitest";
import { fakeFetch, json } from "../../test/fakes.ts";
import { getLocation, locationPath } from "../api/get-location.ts";
import { expectOk } from "../errors/service-errors.ts";
import { createLocationMiddleware } from "./location-middleware.ts";

const configured = "https://services.cloud.mongodb.com";
const regional = "https://us-east-1.aws.services.cloud.mongodb.com";
const location = { deployment_model: "LOCAL", location: "US-VA", hostname: `${regional}/`, ws_hostname: "wss://x" };

function setup(lookupReplies: Array<() => Response>) {
  let lookups = 0;
  const { fetch, calls } = fakeFetch((request) => {
    if (request.path.endsWith("/location")) {
      const reply = lookupReplies[lookups++];
      if (!reply) throw new Error("unexpected lookup");
      return reply();
    }
    return json(200, { $numberInt: "3" });
  });
  const client = createAppServicesClient({ baseUrl: configured, fetch });
  client.use(
    createLocationMiddleware({
      configuredBaseUrl: configured,
      locationPath,
      lookup: async () => (await getLocation(client, "app-1")).hostname,
    }),
  );
  const call = () =>
    expectOk(
      client.POST("/api/client/v2.0/app/{appId}/functions/call", {
        params: { path: { appId: "app-1" } },
        body: { name: "sum", arguments: [{ $numberInt: "1" }] },
      }),
    );
  return { calls, call };
}

describe("location middleware", () => {
  it("asks the configured base once, then sends everything to the returned hostname", async () => {
    const { calls, call } = setup([() => json(200, location)]);
    await call();
    await call();
    const urls = calls.map((c) => `${c.method} ${c.origin}${c.path}`);
    expect(urls).toEqual([
      `GET ${configured}/api/client/v2.0/app/app-1/location`,
      `POST ${regional}/api/client/v2.0/app/app-1/functions/call`,
      `POST ${regional}/api/client/v2.0/app/app-1/functions/call`,
    ]);
    expect(calls[1]?.body).toBe('{"name":"sum","arguments":[{"$numberInt":"1"}]}');
  });

  it("asks again after a failed lookup", async () => {
    const { calls, call } = setup([
      () => {
        throw new TypeError("Failed to fetch");
      },
      () => json(200, location),
    ]);
    await expect(call()).rejects.toBeInstanceOf(TypeError);
    await call();
    expect(calls.filter((c) => c.path.endsWith("/location"))).toHaveLength(2);
  });
});
