// The practical limit: a bare node:http server that answers each benchmark request with the exact
// status, content type and body the emulator answered (captured by the benchmark before it runs),
// after reading the whole request body, as the emulator does. Routes arrive as JSON on stdin:
// { "POST /path": { status, contentType, body } }.
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
  const reply = replies.get(`${request.method} ${request.url}`);
  request.on("data", () => {});
  request.on("end", () => {
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
