import { type ReactNode, useEffect, useRef } from "react";
import { errorMessage } from "../lib/errors/error-message.ts";
import { Button } from "./button.tsx";

/**
 * An error for the whole form or page. It is announced (role="alert") and takes the focus when it
 * appears, or says something else, so keyboard and screen-reader users land on it — once: a form
 * that renders the same error anew at each keystroke (a new fragment each time) keeps its fields'
 * focus (it took every keystroke after the first back to the alert).
 */
export function ErrorMessage({ children, focus = true }: { children: ReactNode; focus?: boolean }) {
  const ref = useRef<HTMLDivElement>(null);
  const said = useRef<string | null>(null);
  useEffect(() => {
    const text = children ? (ref.current?.textContent ?? "") : null;
    if (focus && text !== null && text !== said.current) ref.current?.focus();
    said.current = text;
  }, [children, focus]);
  if (!children) return null;
  return (
    <div className="message message-error" role="alert" tabIndex={-1} ref={ref}>
      {children}
    </div>
  );
}

/** Good news or progress, announced politely. The region stays in the page so updates are heard. */
export function StatusMessage({ children, className }: { children: ReactNode; className?: string }) {
  return (
    <div className={children ? `message message-status ${className ?? ""}` : "visually-hidden"} role="status">
      {children}
    </div>
  );
}

/**
 * Data that could not be loaded: what went wrong, and Try again. Announced, without taking the
 * focus (the page may have several).
 */
export function LoadFailed({ error, onRetry }: { error: unknown; onRetry: () => void }) {
  return (
    <div className="load-failed">
      <ErrorMessage focus={false}>{errorMessage(error)}</ErrorMessage>
      <Button variant="secondary" onClick={onRetry}>
        Try again
      </Button>
    </div>
  );
}
