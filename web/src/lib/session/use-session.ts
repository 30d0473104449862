import { useSyncExternalStore } from "react";
import { sessionStore } from "../api-clients.ts";
import type { Session } from "./session-store.ts";

/** The current session; re-renders on sign-in, sign-out (here or in another tab) and token changes. */
export function useSession(): Session {
  return useSyncExternalStore(sessionStore.subscribe, sessionStore.getSnapshot, sessionStore.getSnapshot);
}
