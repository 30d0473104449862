import { type FormEvent, useCallback, useEffect, useRef, useState } from "react";
import { Link, useLocation } from "wouter";
import { Button } from "../../../components/button.tsx";
import { focusFirstError } from "../../../components/focus-first-error.ts";
import { Page } from "../../../components/page.tsx";
import { onTabMessage } from "../../../lib/broadcast.ts";
import { pendingCredentials } from "../../../lib/pending-credentials.ts";
import { hasErrors } from "../../../lib/validation/rules.ts";
import { isNotConfirmedYet, signIn } from "../hooks/session-actions.ts";
import { ConfirmationHelp, type ConfirmationMode, configuredConfirmationMode } from "./confirmation-help.tsx";
import { EmailField } from "./credentials-fields.tsx";
import { emailErrors } from "./form-rules.ts";

/** Signs in with the password typed at sign-up in this tab; false while the address is still pending. */
async function signInIfConfirmed(): Promise<boolean> {
  const credentials = pendingCredentials.credentials("sign-up");
  if (!credentials) return false;
  try {
    await signIn({ provider: "local-userpass", username: credentials.email, password: credentials.password });
  } catch (error) {
    if (isNotConfirmedYet(error)) return false;
    throw error;
  }
  pendingCredentials.forget("sign-up");
  return true;
}

function AddressForm({ onAddress }: { onAddress: (email: string) => void }) {
  const [email, setEmail] = useState("");
  const [errors, setErrors] = useState<ReturnType<typeof emailErrors>>({});
  const form = useRef<HTMLFormElement>(null);
  function submit(event: FormEvent) {
    event.preventDefault();
    const found = emailErrors({ email });
    setErrors(found);
    if (hasErrors(found)) return focusFirstError(form.current, found);
    onAddress(email.trim());
  }
  return (
    <form ref={form} noValidate onSubmit={submit}>
      <EmailField value={email} onChange={setEmail} error={errors.email} />
      <Button type="submit">Continue</Button>
    </form>
  );
}

/** After signing up: the confirmation e-mail (or the approval) the new account waits for. */
export function CheckInbox() {
  const [email, setEmail] = useState(() => pendingCredentials.email("sign-up"));
  const [mode, setMode] = useState<ConfirmationMode>(configuredConfirmationMode);
  const [, navigate] = useLocation();
  const canFinishHere = pendingCredentials.credentials("sign-up") !== null;

  const check = useCallback(async () => {
    const done = await signInIfConfirmed();
    if (done) navigate("/notes");
    return done;
  }, [navigate]);

  // The confirmation link may be opened in another tab: that tab tells this one, which holds the password.
  useEffect(
    () =>
      onTabMessage((message) => {
        if (message.type === "address-confirmed") void check().catch(() => undefined);
      }),
    [check],
  );

  const title = mode === "approval" ? "Your account is waiting for approval" : "Check your inbox";
  return (
    <Page title={title}>
      {email === null ? (
        <>
          <p>Which address did you sign up with? We will help you confirm it.</p>
          <AddressForm onAddress={setEmail} />
        </>
      ) : (
        <>
          {mode === "approval" ? (
            <p>
              The account for <strong>{email}</strong> has been created and is waiting for approval. You can sign in as
              soon as it is approved.
            </p>
          ) : (
            <p>
              We sent a confirmation link to <strong>{email}</strong>. Open it to activate your account; the link is
              valid for 30 minutes. {canFinishHere ? "This page signs you in once the address is confirmed." : null}
            </p>
          )}
          <ConfirmationHelp
            email={email}
            mode={mode}
            onModeChange={setMode}
            check={canFinishHere ? check : null}
            checkLabel="I have confirmed my address"
          />
          <p>
            Already confirmed? <Link href="/sign-in">Sign in</Link>. Wrong address?{" "}
            <Link href="/sign-up">Sign up again</Link>.
          </p>
        </>
      )}
    </Page>
  );
}
