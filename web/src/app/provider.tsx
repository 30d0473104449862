import { type ReactNode, StrictMode } from "react";
import { Router } from "wouter";

/** App-wide providers. The session is an external store (lib/session), so it needs no context. */
export function AppProvider({ children }: { children: ReactNode }) {
  return (
    <StrictMode>
      <Router>{children}</Router>
    </StrictMode>
  );
}
