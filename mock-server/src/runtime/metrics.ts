/**
 * The server's metrics in Prometheus' text format, through prom-client on a registry of its own
 * (no module-level default registry: each server has its own). Besides the request metrics
 * (http/request-metrics.ts): open change streams and their unsent bytes, large requests' bytes in
 * flight, the database pool's use, the mail outbox's depth and this instance's delivery attempts
 * by outcome, readiness, and prom-client's process metrics (CPU, memory, event loop lag, garbage
 * collection). All but the counters are read when scraped.
 */
import { Counter, collectDefaultMetrics, Gauge, Registry } from "prom-client";
import type { Emulator } from "./emulator.ts";

export const metricPrefix = "appservices_";

export function emulatorMetrics(emulator: Emulator): Registry {
  const registry = new Registry();
  const registers = [registry];
  collectDefaultMetrics({ register: registry, prefix: metricPrefix });
  new Gauge({
    name: `${metricPrefix}change_streams_open`,
    help: "Change streams open on this instance.",
    registers,
    collect() {
      this.set(emulator.apps.loaded().reduce((sum, app) => sum + app.streams.size, 0));
    },
  });
  const connections = emulator.store.connections?.bind(emulator.store);
  if (connections) {
    new Gauge({
      name: `${metricPrefix}database_pool_connections`,
      help: "This instance's database connections: open (total), idle, and requests waiting for one.",
      labelNames: ["state"] as const,
      registers,
      collect() {
        const now = connections();
        this.set({ state: "total" }, now.total);
        this.set({ state: "idle" }, now.idle);
        this.set({ state: "waiting" }, now.waiting);
      },
    });
    new Gauge({
      name: `${metricPrefix}database_pool_max`,
      help: "The most database connections this instance opens (--database-pool).",
      registers,
      collect() {
        this.set(connections().max);
      },
    });
  }
  new Gauge({
    name: `${metricPrefix}large_request_bytes`,
    help: "Body bytes read of requests with bodies of 1 MiB or more in flight on this instance (at most 64 MiB).",
    registers,
    collect() {
      this.set(emulator.largeRequests.bytes);
    },
  });
  new Counter({
    name: `${metricPrefix}connections_refused_total`,
    help: "Connections this instance closed as they came: their client address held its 256 already (a trusted proxy's is not capped).",
    registers,
    collect() {
      this.reset();
      this.inc(emulator.refusedConnections.overCap);
    },
  });
  new Gauge({
    name: `${metricPrefix}reply_unsent_bytes`,
    help: "Bytes of large replies this instance's clients have not read yet (past 256 MiB those stalled longest are cut).",
    registers,
    collect() {
      this.set(emulator.unsentReplies.bytes);
    },
  });
  new Counter({
    name: `${metricPrefix}replies_cut_total`,
    help: "Connections cut because their reply sent nothing for 60 s, or had stalled longest past 256 MiB unsent.",
    registers,
    collect() {
      this.reset();
      this.inc(emulator.unsentReplies.cut);
    },
  });
  new Gauge({
    name: `${metricPrefix}change_stream_unsent_bytes`,
    help: "Bytes this instance's change streams hold unsent to slow clients (past 256 MiB slow streams end).",
    registers,
    collect() {
      this.set(emulator.streamBacklog.bytes);
    },
  });
  new Gauge({
    name: `${metricPrefix}mail_outbox_queued`,
    help: "Messages waiting for SMTP delivery (every instance's, where they share a database).",
    registers,
    async collect() {
      this.set(await emulator.store.mail.queuedCount().catch(() => Number.NaN));
    },
  });
  new Counter({
    name: `${metricPrefix}mail_delivery_attempts_total`,
    help: "This instance's SMTP delivery attempts by outcome: sent, retry (refused or unreachable), failed (given up).",
    labelNames: ["outcome"] as const,
    registers,
    collect() {
      this.reset();
      for (const [outcome, count] of Object.entries(emulator.mailDeliveries)) this.inc({ outcome }, count);
    },
  });
  new Gauge({
    name: `${metricPrefix}ready`,
    help: "1 while this instance should get traffic (/_mock/v1/ready answers 200), else 0.",
    registers,
    async collect() {
      this.set((await emulator.readiness()).status === "ready" ? 1 : 0);
    },
  });
  return registry;
}
