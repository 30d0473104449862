/**
 * Messages between this app's tabs that are not session changes (those travel through the
 * session record's storage events): "an address was just confirmed", so the tab that holds the
 * password can finish signing in or linking.
 */
import { appId } from "./api-clients.ts";

export type TabMessage = { type: "address-confirmed"; email: string | null };

const channelName = `notes:app(${appId})`;

function open(): BroadcastChannel | null {
  return typeof BroadcastChannel === "undefined" ? null : new BroadcastChannel(channelName);
}

export function broadcast(message: TabMessage): void {
  const channel = open();
  channel?.postMessage(message);
  channel?.close();
}

/** Calls `listener` for every message from the other tabs; returns the unsubscribe function. */
export function onTabMessage(listener: (message: TabMessage) => void): () => void {
  const channel = open();
  if (!channel) return () => {};
  channel.onmessage = (event: MessageEvent<TabMessage>) => listener(event.data);
  return () => channel.close();
}
