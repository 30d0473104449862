import { useId, useState } from "react";
import { Button } from "../../../components/button.tsx";
import { ErrorMessage, StatusMessage } from "../../../components/messages.tsx";
import { config } from "../../../config/env.ts";
import { errorMessage } from "../../../lib/errors/error-message.ts";
import { AppServicesRequestError } from "../../../lib/errors/service-errors.ts";
import { resendConfirmationEmail } from "../api/resend-confirmation-email.ts";
import { retryCustomConfirmation } from "../api/retry-custom-confirmation.ts";

/**
 * How this app confirms addresses: by e-mail, or by a confirmation function that may leave the
 * address waiting for approval. The client cannot ask the service, so the configuration says which
 * (VITE_AUTH_CONFIRMATION); a reply that says otherwise switches the page over.
 */
export type ConfirmationMode = "email" | "approval";

/** The mode the app's configuration names (an automatic confirmation needs no help: e-mail then). */
export function configuredConfirmationMode(confirmation = config.authConfirmation): ConfirmationMode {
  return confirmation === "function" ? "approval" : "email";
}

interface ConfirmationHelpProps {
  email: string;
  mode: ConfirmationMode;
  onModeChange: (mode: ConfirmationMode) => void;
  /** Tries to finish (sign in, or link) with the password this tab still holds; true when done. */
  check: (() => Promise<boolean>) | null;
  checkLabel: string;
}

type Busy = "resend" | "check" | "retry" | null;

const serviceText = (error: unknown) => (error instanceof AppServicesRequestError ? error.serviceMessage : "");

export function ConfirmationHelp({ email, mode, onModeChange, check, checkLabel }: ConfirmationHelpProps) {
  const headingId = useId();
  const [busy, setBusy] = useState<Busy>(null);
  const [status, setStatus] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);

  async function act(which: Exclude<Busy, null>, work: () => Promise<void>) {
    if (busy) return;
    setBusy(which);
    setStatus(null);
    setError(null);
    try {
      await work();
    } catch (caught) {
      if (caught instanceof AppServicesRequestError && caught.code === "UserAlreadyConfirmed") {
        if (check && (await check().catch(() => false))) return;
        setStatus("Your e-mail address is already confirmed. You can sign in.");
        return;
      }
      if (serviceText(caught).includes("confirmation runs a function")) onModeChange("approval");
      if (serviceText(caught).includes("confirmation function is not enabled")) onModeChange("email");
      setError(errorMessage(caught, "confirm"));
    } finally {
      setBusy(null);
    }
  }

  const resend = () =>
    act("resend", async () => {
      await resendConfirmationEmail(email);
      onModeChange("email");
      setStatus(`We sent a new confirmation link to ${email}. It is valid for 30 minutes.`);
    });

  const tryFinish = () =>
    act("check", async () => {
      if (check && (await check())) return;
      setError(
        mode === "approval"
          ? "Your account is still waiting for approval. Try again later."
          : "Your e-mail address is not confirmed yet. Open the link in the e-mail we sent, then try again.",
      );
    });

  const retry = () =>
    act("retry", async () => {
      await retryCustomConfirmation(email);
      onModeChange("approval");
      if (check) {
        if (await check()) return;
        setStatus("Your account is still waiting for approval. Try again later.");
      } else {
        setStatus("We asked again for your account to be approved. If it is, you can sign in now.");
      }
    });

  return (
    <div className="confirmation-help">
      <ErrorMessage>{error}</ErrorMessage>
      <StatusMessage>{status}</StatusMessage>
      <div className="actions">
        {check ? (
          <Button onClick={tryFinish} busy={busy === "check"} disabled={busy !== null}>
            {checkLabel}
          </Button>
        ) : null}
        {mode !== "approval" ? (
          <Button variant="secondary" onClick={resend} busy={busy === "resend"} disabled={busy !== null}>
            Resend confirmation e-mail
          </Button>
        ) : null}
      </div>
      {mode === "approval" ? (
        <section aria-labelledby={headingId} className="subsection">
          <h2 id={headingId}>Approval</h2>
          <p>
            Some accounts are approved by the Notes team instead of by e-mail. If yours is waiting, you can ask for the
            approval to be checked again.
          </p>
          <Button variant="secondary" onClick={retry} busy={busy === "retry"} disabled={busy !== null}>
            Retry confirmation
          </Button>
        </section>
      ) : null}
    </div>
  );
}
