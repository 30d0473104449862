/**
 * Live events for the inspector and for tests that want to observe the emulator
 * (`GET /_mock/v1/events`). Plain publish/subscribe; listeners must not throw.
 */
import type { ControlSchemas } from "../openapi/types.ts";

export type ControlEventType = "app" | "user" | "mail" | "data" | "request" | "clock" | "fault";

export interface ControlEvent {
  type: ControlEventType;
  appId?: string;
  account?: string;
  at: string;
  action: string;
  id?: string;
  detail?: Record<string, unknown>;
}

export type EventListener = (event: ControlEvent) => void;

export class EventBus {
  private readonly listeners = new Set<EventListener>();

  subscribe(listener: EventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private readonly shutdownListeners = new Set<() => void>();

  /** Runs `listener` when the server shuts down (streams end themselves so the drain can finish). */
  onShutdown(listener: () => void): () => void {
    this.shutdownListeners.add(listener);
    return () => this.shutdownListeners.delete(listener);
  }

  shutdown(): void {
    for (const listener of [...this.shutdownListeners]) listener();
  }

  get size(): number {
    return this.listeners.size;
  }

  emit(event: Omit<ControlEvent, "at"> & { at?: string }): void {
    if (this.listeners.size === 0) return;
    const full: ControlEvent = { ...event, at: event.at ?? new Date().toISOString() };
    for (const listener of this.listeners) listener(full);
  }
}

export type { ControlSchemas };
