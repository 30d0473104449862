/**
 * `--metrics-address`: the metrics on an address of their own (at `/metrics`, Prometheus' default
 * path), without a token — for a network only the monitoring reaches. Nothing else is served there.
 */
import { createServer } from "node:http";
import type { Registry } from "prom-client";

export interface MetricsListener {
  url: string;
  close(): Promise<void>;
}

export function listenForMetrics(registry: Registry, host: string, port: number): Promise<MetricsListener> {
  const server = createServer((request, response) => {
    request.resume();
    if (request.method !== "GET" || (request.url ?? "").split("?")[0] !== "/metrics") {
      response
        .writeHead(404, { "content-type": "text/plain; charset=utf-8" })
        .end("Not found: the metrics are at /metrics\n");
      return;
    }
    registry.metrics().then(
      (text) => response.writeHead(200, { "content-type": registry.contentType }).end(text),
      () => response.writeHead(500, { "content-type": "text/plain; charset=utf-8" }).end("metrics unavailable\n"),
    );
  });
  return new Promise((resolve, reject) => {
    const refused = (error: NodeJS.ErrnoException) =>
      reject(
        error.code === "EADDRINUSE"
          ? new Error(`--metrics-address: port ${port} on ${host} is in use: choose another`, { cause: error })
          : error,
      );
    server.once("error", refused);
    server.listen(port, host, () => {
      server.off("error", refused);
      const address = server.address();
      const bound = address !== null && typeof address === "object" ? address.port : port;
      resolve({
        url: `http://${host.includes(":") ? `[${host}]` : host}:${bound}/metrics`,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections();
            server.close(() => done());
          }),
      });
    });
  });
}
