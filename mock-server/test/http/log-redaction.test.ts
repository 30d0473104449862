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

it("censors secret-named fields of anything else logged, at any depth, and leaves errors to the serializer", async () => {
  const stream = new PassThrough();
  let logged = "";
  stream.on("data", (chunk: Buffer) => (logged += chunk.toString("utf8")));
  const app = await testApp({ logLevel: "info", logStream: stream });
  app.log.warn(
    {
      body: { username: "ada@example.com", password: "secret-password", nested: [{ refresh_token: "secret-refresh" }] },
      headers: { Authorization: "Bearer secret-header", cookie: "secret-cookie", accept: "application/json" },
      err: new Error("kept message"),
    },
    "context",
  );
  await app.close();
  const line = JSON.parse(logged.split("\n").find((l) => l.includes('"context"'))!);
  expect(line.body).toEqual({
    username: "ada@example.com",
    password: "[redacted]",
    nested: [{ refresh_token: "[redacted]" }],
  });
  expect(line.headers).toEqual({ Authorization: "[redacted]", cookie: "[redacted]", accept: "application/json" });
  expect(line.err).toMatchObject({ message: "kept message", type: "Error" });
  expect(logged).not.toMatch(/secret-(password|refresh|header|cookie)/);
});
