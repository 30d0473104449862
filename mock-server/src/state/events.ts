/**
 * Live events for the inspector and for tests that want to observe the emulator
 * (`GET /_mock/v1/events`). Plain publish/subscribe; listeners must not throw.
 */
import type { ControlSchemas } from "../openapi/types.ts";

/** One live event, as the control document describes it. */
export type ControlEvent = ControlSchemas["ControlEvent"];

/** The app an event is of, if any. */
export const appOf = (event: ControlEvent): string | undefined => ("appId" in event ? event.appId : undefined);

/** The EmailJS account an event is of, if any. */
export const accountOf = (event: ControlEvent): string | undefined => ("account" in event ? event.account : undefined);

/** An event as emitted: `at` is taken when it is sent, unless given. */
type Emitted<E> = E extends ControlEvent ? Omit<E, "at"> & { at?: string } : never;

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

  emit(event: Emitted<ControlEvent>): void {
    if (this.listeners.size === 0) return;
    const full = { ...event, at: event.at ?? new Date().toISOString() } as ControlEvent;
    for (const listener of this.listeners) listener(full);
  }
}

export type { ControlSchemas };
