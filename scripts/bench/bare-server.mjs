// The practical limit: a bare node:http server that answers each benchmark request with the exact
// status, content type and body the emulator answered (captured by the benchmark before it runs),
// after reading the whole request body, as the emulator does. Routes arrive as JSON on stdin, keyed
// by method, URL and request body (two scenarios may share a URL, as `sum` and `find` do):
// { "POST /path {\"name\":\"sum\"}": { status, contentType, body } }.
import { createServer } from "node:http";

const routes = JSON.parse(await new Response(process.stdin).text());
const replies = new Map(
  Object.entries(routes).map(([key, r]) => [
    key,
    {
      status: r.status,
      headers: {
        ...(r.contentType ? { "content-type": r.contentType } : {}),
        "content-length": Buffer.byteLength(r.body),
      },
      body: Buffer.from(r.body),
    },
  ]),
);

const server = createServer((request, response) => {
  const chunks = [];
  request.on("data", (chunk) => chunks.push(chunk));
  request.on("end", () => {
    const reply = replies.get(`${request.method} ${request.url} ${Buffer.concat(chunks).toString()}`);
    if (!reply) {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(reply.status, reply.headers);
    response.end(reply.body);
  });
});
server.keepAliveTimeout = 72_000;
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`bare server listening on http://127.0.0.1:${server.address().port}\n`);
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
