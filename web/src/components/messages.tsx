import { type ReactNode, useEffect, useRef } from "react";

/**
 * An error for the whole form or page. It is announced (role="alert") and takes the focus when it
 * appears, so keyboard and screen-reader users land on it.
 */
export function ErrorMessage({ children, focus = true }: { children: ReactNode; focus?: boolean }) {
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (focus && children) ref.current?.focus();
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
