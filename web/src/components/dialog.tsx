import { type ReactNode, useEffect, useId, useRef } from "react";
import { Button } from "./button.tsx";
import { ErrorMessage } from "./messages.tsx";

interface DialogProps {
  open: boolean;
  title: string;
  onClose: () => void;
  /** While true, Escape does not close the dialog (a request runs). */
  busy?: boolean;
  children: ReactNode;
}

function ModalDialog({ title, onClose, busy = false, children }: Omit<DialogProps, "open">) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  // What had the focus when the dialog opened (read during the first render, before showModal moves it).
  const opener = useRef(typeof document === "undefined" ? null : document.activeElement);

  useEffect(() => {
    const dialog = ref.current;
    const previous = opener.current;
    if (dialog && !dialog.open) {
      if (typeof dialog.showModal === "function") dialog.showModal();
      else dialog.setAttribute("open", "");
    }
    return () => {
      if (previous instanceof HTMLElement && previous.isConnected) previous.focus();
    };
  }, []);

  return (
    <dialog
      ref={ref}
      aria-labelledby={titleId}
      className="dialog"
      onCancel={(event) => {
        event.preventDefault();
        if (!busy) onClose();
      }}
    >
      <h2 id={titleId}>{title}</h2>
      {children}
    </dialog>
  );
}

/**
 * A modal dialog on the native <dialog> element: it traps the focus, closes on Escape, and gives
 * the focus back to what had it before. It is in the page only while open.
 */
export function Dialog({ open, ...props }: DialogProps) {
  return open ? <ModalDialog {...props} /> : null;
}

interface ConfirmDialogProps {
  open: boolean;
  title: string;
  children: ReactNode;
  confirmLabel: string;
  onConfirm: () => void;
  onCancel: () => void;
  busy?: boolean;
  error?: ReactNode;
}

/** "Are you sure?" for destructive actions; Cancel has the focus first. */
export function ConfirmDialog({
  open,
  title,
  children,
  confirmLabel,
  onConfirm,
  onCancel,
  busy,
  error,
}: ConfirmDialogProps) {
  return (
    <Dialog open={open} title={title} onClose={onCancel} busy={busy ?? false}>
      <div className="dialog-body">{children}</div>
      <ErrorMessage>{error}</ErrorMessage>
      <div className="actions">
        <Button variant="secondary" onClick={onCancel} disabled={busy}>
          Cancel
        </Button>
        <Button variant="danger" onClick={onConfirm} busy={busy ?? false}>
          {confirmLabel}
        </Button>
      </div>
    </Dialog>
  );
}
