/**
 * Fastify's request lines are built only at a level that writes them; a failed request's line is
 * kept at any level.
 */
import { PassThrough } from "node:stream";
import type { FastifyReply, FastifyRequest } from "fastify";
import { expect, it, vi } from "vitest";
import { ErrorsOnlyRequestLines, requestLinesAt } from "../../src/http/request-lines.ts";
import { testApp } from "../helpers/app.ts";

it("uses Fastify's own request lines at info and below, errors only above", () => {
  for (const level of ["info", "debug"]) expect(requestLinesAt(level), level).toBeUndefined();
  for (const level of ["warn", "error"]) expect(requestLinesAt(level), level).toBeInstanceOf(ErrorsOnlyRequestLines);
});

it("builds no line for a request that succeeds, and keeps the line of one that failed", () => {
  const log = { info: vi.fn(), error: vi.fn() };
  const request = { log } as unknown as FastifyRequest;
  const reply = { log, elapsedTime: 1.5 } as unknown as FastifyReply;
  const lines = new ErrorsOnlyRequestLines();
  lines.incomingRequest();
  lines.requestCompleted(null, request, reply);
  expect(log.info).not.toHaveBeenCalled();
  expect(log.error).not.toHaveBeenCalled();
  const error = new Error("socket hang up");
  lines.requestCompleted(error, request, reply);
  expect(log.error).toHaveBeenCalledWith({ res: reply, err: error, responseTime: 1.5 }, "request errored");
});

it("writes each request's lines at info, with its id", async () => {
  const stream = new PassThrough();
  let logged = "";
  stream.on("data", (chunk: Buffer) => (logged += chunk.toString("utf8")));
  const app = await testApp({ logLevel: "info", logStream: stream });
  expect((await app.inject({ method: "GET", url: "/api/client/v2.0/app/local-app/location" })).statusCode).toBe(200);
  await app.close();
  const lines = logged
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as { msg: string; reqId?: string })
    .filter((line) => line.msg === "incoming request" || line.msg === "request completed");
  expect(lines.map((line) => line.msg)).toEqual(["incoming request", "request completed"]);
  expect(lines[0]!.reqId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  expect(lines[1]!.reqId).toBe(lines[0]!.reqId);
});
