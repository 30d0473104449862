/**
 * When the budget of unsent replies looks (http/unsent-replies.ts). A reply "sent nothing since
 * the last look" only if its connection had the loop's turns to send in: timers run before the
 * turn's I/O, so a look whose timer came due while the loop was held (a long task, the host
 * pausing the process) would otherwise find every reply still where it was — though their clients
 * read all along — and cut them past the budget. Here a reply's progress arrives only as I/O (a
 * byte on a loopback connection), the way a connection's writes do.
 */
import { EventEmitter } from "node:events";
import type { ServerResponse } from "node:http";
import { connect, createServer, type Server, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UnsentReplies } from "../../src/http/unsent-replies.ts";
import { until } from "../helpers/until.ts";

/** A reply being sent whose client takes 64 KiB each time `sent` is called. */
class FakeReply extends EventEmitter {
  writableFinished = false;
  destroyed = false;
  writableLength = 12 * 1024 * 1024;
  socket = { _handle: { writeQueueSize: this.writableLength } };
  sent(): void {
    this.socket._handle.writeQueueSize -= 64 * 1024;
  }
  destroy(): void {
    this.destroyed = true;
    this.emit("close");
  }
  finish(): void {
    this.writableFinished = true;
    this.emit("finish");
  }
}

/** Holds the whole thread, as a long task or a paused process does. */
function holdTheLoop(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

let server: Server;
let writer: Socket;
let reader: Socket;
beforeAll(async () => {
  const accepted = new Promise<Socket>((resolve) => {
    server = createServer(resolve);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  writer = connect(port, "127.0.0.1");
  reader = await accepted;
  await new Promise((resolve) => writer.once("connect", resolve));
});
afterAll(async () => {
  writer.destroy();
  reader.destroy();
  await new Promise((resolve) => server.close(resolve));
});

describe("the looks of the unsent replies' budget", () => {
  it("count what the connections sent while the loop was held, before judging them stalled", async () => {
    // Past the budget with one reply alone; a look every 100 ms.
    const replies = new UnsentReplies({ bytes: 1024 * 1024, idleMs: 400 });
    const reply = new FakeReply();
    // The client's reads, as I/O: each byte on the loopback connection lets the reply send more.
    reader.on("data", (bytes: Buffer) => {
      for (let i = 0; i < bytes.length; i++) reply.sent();
    });
    const judged = replies as unknown as { sweep(): void };
    const sweep = judged.sweep.bind(replies);
    let looks = 0;
    judged.sweep = () => {
      sweep();
      looks += 1;
      if (looks === 3) {
        // The loop held for two and a half looks' time right after a look, the client reading
        // meanwhile: its read is the next turn's I/O.
        setImmediate(() => {
          writer.write("x");
          holdTheLoop(250);
        });
      } else writer.write("x");
    };
    replies.watch(reply as unknown as ServerResponse);
    await until(() => replies.bytes > 0, "the reply to be watched");
    writer.write("x");
    await until(() => looks >= 6 || reply.destroyed, "three looks after the held one", { timeoutMs: 10_000 });
    expect(reply.destroyed).toBe(false);
    expect(replies.cut).toBe(0);
    reply.finish();
    expect(replies.bytes).toBe(0);
  });
});
