import { PassThrough } from "node:stream";
import { expect, it } from "vitest";
import { testApp } from "../helpers/app.ts";

it("request logs carry no token from the query or the headers", async () => {
  const stream = new PassThrough();
  let logged = "";
  stream.on("data", (chunk: Buffer) => (logged += chunk.toString("utf8")));
  const app = await testApp({ logLevel: "info", logStream: stream });
  await app.inject({
    method: "GET",
    url: "/api/client/v2.0/app/local-app/functions/call?baas_request=e30&baas_at=secret-access-token",
    headers: { authorization: "Bearer secret-bearer-token" },
  });
  await app.close();
  expect(logged).toContain("/functions/call?");
  expect(logged).toContain("incoming request");
  expect(logged).not.toContain("secret-access-token");
  expect(logged).not.toContain("secret-bearer-token");
});
