// The load generator, run as its own process (pinned to the other core than the server): reads a
// job as JSON on stdin, runs autocannon (a warm-up first, discarded), and prints one JSON result.
// Latencies are collected raw from autocannon's `response` events (float milliseconds), because
// its own histogram keeps whole milliseconds only.
//
// Job: { url, connections, duration | amount, warmup?, requests: [{method, path, headers, body}],
//        rotateAuthorization?: ["Bearer …", …], rotate?: [{ headers?, body? }, …], collect?: { field, every } }
// `rotate` gives the requests, in turn, these headers and bodies (traffic of many users).
// `collect` keeps a field of every n-th JSON reply (e.g. access tokens of logins spread over a run).
import autocannon from "autocannon";

const job = JSON.parse(await new Response(process.stdin).text());

function percentile(sorted, p) {
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index];
}

function run({ duration, amount, record }) {
  const latencies = [];
  const statuses = {};
  const collected = [];
  let rotation = 0;
  let replies = 0;
  const collect = record ? job.collect : undefined;
  const tokens = job.rotateAuthorization;
  const variants = job.rotate?.map((v) => ({
    ...v,
    ...(v.body !== undefined ? { body: typeof v.body === "string" ? v.body : JSON.stringify(v.body) } : {}),
  }));
  const requests = job.requests.map((r) => ({
    method: r.method,
    path: r.path,
    headers: r.headers ?? {},
    ...(r.body !== undefined ? { body: typeof r.body === "string" ? r.body : JSON.stringify(r.body) } : {}),
    ...(tokens
      ? {
          setupRequest: (request) => {
            request.headers = { ...request.headers, authorization: tokens[rotation++ % tokens.length] };
            return request;
          },
        }
      : {}),
    ...(variants
      ? {
          setupRequest: (request) => {
            const variant = variants[rotation++ % variants.length];
            if (variant.headers) request.headers = { ...request.headers, ...variant.headers };
            if (variant.body !== undefined) request.body = variant.body;
            return request;
          },
        }
      : {}),
    ...(collect
      ? {
          onResponse: (status, body) => {
            if (status < 300 && replies++ % collect.every === 0) collected.push(JSON.parse(body)[collect.field]);
          },
        }
      : {}),
  }));
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: job.url,
        connections: job.connections ?? 50,
        ...(amount !== undefined ? { amount } : { duration }),
        requests,
        timeout: job.timeoutSeconds ?? 10,
      },
      (error, result) => (error ? reject(error) : resolve({ result, latencies, statuses, collected })),
    );
    instance.on("response", (_client, statusCode, _bytes, responseTime) => {
      statuses[statusCode] = (statuses[statusCode] ?? 0) + 1;
      if (record) latencies.push(responseTime);
    });
  });
}

if (job.warmup) await run({ duration: job.warmup, record: false });
const { result, latencies, statuses, collected } = await run({
  duration: job.duration,
  amount: job.amount,
  record: true,
});
const sorted = Float64Array.from(latencies).sort();
const sum = latencies.reduce((a, b) => a + b, 0);
const ok = Object.entries(statuses)
  .filter(([status]) => status.startsWith("2"))
  .reduce((total, [, n]) => total + n, 0);
process.stdout.write(
  `${JSON.stringify({
    requests: result.requests.total,
    seconds: result.duration,
    rps: ok / result.duration,
    ok,
    statuses,
    errors: result.errors,
    timeouts: result.timeouts,
    non2xx: result.non2xx,
    latency: {
      mean: sum / Math.max(1, latencies.length),
      p50: percentile(sorted, 50),
      p90: percentile(sorted, 90),
      p99: percentile(sorted, 99),
      p999: percentile(sorted, 99.9),
      max: sorted.length > 0 ? sorted[sorted.length - 1] : Number.NaN,
    },
    bytesPerResponse: result.throughput.total / Math.max(1, result.requests.total),
    ...(job.collect ? { collected } : {}),
  })}\n`,
);
