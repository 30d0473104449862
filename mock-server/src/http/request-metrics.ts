/**
 * Request metrics (prom-client, on a registry of the server's own): requests answered by operation
 * and status, their latency by operation, and the refusals of rate limits (429) by operation. The
 * operation is the route's operationId ("unmatched" for requests no route took). Event streams are
 * counted when they end, but their length is no latency: they stay out of the histogram.
 */
import type { FastifyInstance } from "fastify";
import { Counter, Histogram, type Registry } from "prom-client";

/** Adds the request metrics, named `<prefix>http_requests_total` and so on, to `registry`. */
export function registerRequestMetrics(app: FastifyInstance, registry: Registry, metricPrefix: string): void {
  const requests = new Counter({
    name: `${metricPrefix}http_requests_total`,
    help: "Requests answered, by operation and status.",
    labelNames: ["operation", "status"] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: `${metricPrefix}http_request_duration_seconds`,
    help: "Time to answer a request (event streams excluded), by operation.",
    labelNames: ["operation"] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const refusals = new Counter({
    name: `${metricPrefix}rate_limit_refusals_total`,
    help: "Requests refused by a rate limit or cap (429), by operation.",
    labelNames: ["operation"] as const,
    registers: [registry],
  });
  app.addHook("onResponse", (request, reply, done) => {
    const operation = request.routeOptions.config?.operationId ?? "unmatched";
    const status = reply.statusCode;
    requests.inc({ operation, status: String(status) });
    if (status === 429) refusals.inc({ operation });
    const type = reply.raw.getHeader("content-type");
    if (!(typeof type === "string" && type.startsWith("text/event-stream")))
      latency.observe({ operation }, reply.elapsedTime / 1000);
    done();
  });
}
