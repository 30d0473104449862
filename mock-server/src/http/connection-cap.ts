/**
 * Connections one client address (an IPv6 client: its /64) may hold open at once. A connection
 * costs a descriptor and some memory whether or not it carries a request, and one that sends its
 * request slowly is held for minutes (Node's request timeout): without a cap, one client could
 * open them until the process has no descriptor left for anyone (nor for its database or its
 * files). Past the cap a new connection of that address is closed as it comes, before a byte of
 * it is read (or a TLS handshake made); the address's others are untouched, and a new one is
 * taken once one closes.
 *
 * Addresses the caller exempts are not counted: a trusted proxy's, behind which every client has
 * that address (the proxy caps its own clients).
 */
import type { Server, Socket } from "node:net";
import { addressKey } from "./client-address.ts";

/** The cap's default: far past what browsers open to one host (six each), a few hundred users behind one NAT. */
export const defaultConnectionsPerAddress = 256;

export interface ConnectionCapOptions {
  /** Connections one address may hold open at once. */
  max: number;
  /** Addresses that are never capped. */
  exempt: (address: string) => boolean;
  /** Told of each connection closed for being past the cap. */
  onRefused: () => void;
}

export function capConnectionsPerAddress(server: Server, { max, exempt, onRefused }: ConnectionCapOptions): void {
  const open = new Map<string, number>();
  // (An HTTPS server emits the TCP socket here too, before its handshake.)
  server.on("connection", (socket: Socket) => {
    const peer = socket.remoteAddress;
    if (peer === undefined || exempt(peer)) return;
    const address = addressKey(peer);
    const count = open.get(address) ?? 0;
    if (count >= max) {
      onRefused();
      socket.destroy();
      return;
    }
    open.set(address, count + 1);
    socket.once("close", () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left === 0) open.delete(address);
      else open.set(address, left);
    });
  });
}
