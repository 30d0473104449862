import { timingSafeEqual } from "node:crypto";
import type { FastifyRequest } from "fastify";

/** Whether the request carries `Authorization: Bearer <expected>` (compared in constant time). */
export function bearerMatches(request: FastifyRequest, expected: string): boolean {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? "");
  if (!match?.[1]) return false;
  const given = Buffer.from(match[1]);
  const wanted = Buffer.from(expected);
  return given.length === wanted.length && timingSafeEqual(given, wanted);
}
