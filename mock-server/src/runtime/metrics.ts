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
  /** A gauge set, when scraped, to what `read` says. */
  const gauge = (name: string, help: string, read: () => number | Promise<number>) =>
    new Gauge({
      name: `${metricPrefix}${name}`,
      help,
      registers,
      async collect() {
        this.set(await read());
      },
    });
  /** A gauge of one label, each of its values set, when scraped, to what `read` says for it. */
  const labelledGauge = (name: string, help: string, label: string, read: () => Record<string, number>) =>
    new Gauge({
      name: `${metricPrefix}${name}`,
      help,
      labelNames: [label],
      registers,
      collect() {
        for (const [value, n] of Object.entries(read())) this.set({ [label]: value }, n);
      },
    });
  /** A counter of one label, each of its values set, when scraped, to the running total `read` says for it. */
  const labelledCounter = (name: string, help: string, label: string, read: () => Record<string, number>) =>
    new Counter({
      name: `${metricPrefix}${name}`,
      help,
      labelNames: [label],
      registers,
      collect() {
        this.reset();
        for (const [value, n] of Object.entries(read())) this.inc({ [label]: value }, n);
      },
    });
  /** A counter set, when scraped, to the running total `read` says (kept by the emulator). */
  const counter = (name: string, help: string, read: () => number) =>
    new Counter({
      name: `${metricPrefix}${name}`,
      help,
      registers,
      collect() {
        this.reset();
        this.inc(read());
      },
    });

  gauge("change_streams_open", "Change streams open on this instance.", () =>
    emulator.apps.loaded().reduce((sum, app) => sum + app.streams.size, 0),
  );
  const connections = emulator.store.connections?.bind(emulator.store);
  if (connections) {
    labelledGauge(
      "database_pool_connections",
      "This instance's database connections: open (total), idle, and requests waiting for one.",
      "state",
      () => {
        const { total, idle, waiting } = connections();
        return { total, idle, waiting };
      },
    );
    gauge(
      "database_pool_max",
      "The most database connections this instance opens (--database-pool).",
      () => connections().max,
    );
  }
  labelledGauge(
    "budget",
    "What this instance shares among its clients (--budgets): bytes of bodies, replies and streams, connections per address.",
    "budget",
    () => ({ ...emulator.budgets }),
  );
  gauge(
    "large_request_bytes",
    "Body bytes read of requests with bodies of 16 KiB or more in flight on this instance (at most its bodies budget).",
    () => emulator.largeRequests.bytes,
  );
  counter(
    "connections_refused_total",
    "Connections this instance closed as they came: their client address held its connections budget already (a trusted proxy's is not capped).",
    () => emulator.refusedConnections.overCap,
  );
  gauge(
    "reply_unsent_bytes",
    "Bytes of large replies this instance's clients have not read yet (past its replies budget those stalled longest are cut).",
    () => emulator.unsentReplies.bytes,
  );
  counter(
    "replies_cut_total",
    "Connections cut because their reply sent nothing for 60 s, or had stalled longest past the replies budget.",
    () => emulator.unsentReplies.cut,
  );
  gauge(
    "change_stream_unsent_bytes",
    "Bytes this instance's change streams hold unsent to slow clients (past its streams budget slow streams end).",
    () => emulator.streamBacklog.bytes,
  );
  gauge(
    "mail_outbox_queued",
    "Messages waiting for SMTP delivery (every instance's, where they share a database).",
    () => emulator.store.mail.queuedCount().catch(() => Number.NaN),
  );
  labelledCounter(
    "mail_delivery_attempts_total",
    "This instance's SMTP delivery attempts by outcome: sent, retry (refused or unreachable), failed (given up).",
    "outcome",
    () => ({ ...emulator.mailDeliveries }),
  );
  labelledCounter(
    "retention_removed_total",
    "Rows this instance's retention sweeps removed from the database, by kind: mail, tokens, sessions, anonymous_users.",
    "kind",
    () => ({ ...emulator.retention?.removed }),
  );
  labelledCounter(
    "fallback_token_uses_total",
    "Requests whose token a fallback secret signed (--signing-secret-fallbacks), by type: access, refresh. While they come, dropping the fallback signs those users out.",
    "type",
    () => ({ ...emulator.fallbackTokenUses }),
  );
  gauge("function_processes", "Function processes running on this instance, every app's (decision 0004).", () =>
    emulator.apps.loaded().reduce((sum, app) => sum + app.functions.processCount, 0),
  );
  counter(
    "function_processes_busy_total",
    "Function processes seen busy (a call held their thread): new calls went elsewhere, or waited when the app had no room.",
    () => emulator.apps.functionCounts.busy,
  );
  counter(
    "function_processes_out_of_memory_total",
    "Function processes that ran out of memory, failing the calls in them.",
    () => emulator.apps.functionCounts.outOfMemory,
  );
  const recovery = emulator.triggerRecovery;
  if (recovery) {
    gauge(
      "trigger_events_held",
      "Trigger events kept in the database that this instance holds (waiting or running; decision 0031).",
      () => emulator.apps.heldTriggerEvents().length,
    );
    counter(
      "trigger_events_claimed_total",
      "Trigger events this instance claimed from instances that stopped renewing them, to run.",
      () => recovery.claimed,
    );
  }
  gauge("ready", "1 while this instance should get traffic (/_mock/v1/ready answers 200), else 0.", async () =>
    (await emulator.readiness()).status === "ready" ? 1 : 0,
  );
  return registry;
}
