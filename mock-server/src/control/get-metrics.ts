import { controlErrors } from "../errors/catalogue.ts";
import { bearerMatches } from "../http/bearer.ts";
import { defineControlRoute } from "./route.ts";

/** The metrics in Prometheus' text format, here only behind `--metrics-token` (runtime/metrics.ts). */
export default defineControlRoute("getMetrics", async (request, reply) => {
  const { metrics, emulator } = request.server;
  const token = emulator.options.metricsToken;
  if (metrics === null || token === null)
    throw controlErrors.notFound(
      "the metrics are served here only with --metrics-token (and then behind it), or on an address of their own with --metrics-address",
    );
  if (!bearerMatches(request, token)) throw controlErrors.metricsUnauthorized();
  reply.type(metrics.contentType);
  return metrics.metrics();
});
