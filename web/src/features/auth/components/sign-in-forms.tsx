import { type FormEvent, type ReactNode, useRef, useState } from "react";
import { Link } from "wouter";
import { Button } from "../../../components/button.tsx";
import { Field } from "../../../components/field.tsx";
import { focusFirstError } from "../../../components/focus-first-error.ts";
import { ErrorMessage, StatusMessage } from "../../../components/messages.tsx";
import { config } from "../../../config/env.ts";
import { errorMessage } from "../../../lib/errors/error-message.ts";
import { useAsyncAction } from "../../../lib/hooks/use-async-action.ts";
import { useNavigateWhileMounted } from "../../../lib/hooks/use-navigate-while-mounted.ts";
import type { SignOutReason } from "../../../lib/session/session-store.ts";
import { useSession } from "../../../lib/session/use-session.ts";
import { hasErrors } from "../../../lib/validation/rules.ts";
import { isNotConfirmedYet, signIn } from "../hooks/session-actions.ts";
import { useNextLocation } from "../hooks/use-next-location.ts";
import { ConfirmationHelp, type ConfirmationMode, configuredConfirmationMode } from "./confirmation-help.tsx";
import { CredentialsFields } from "./credentials-fields.tsx";
import { apiKeySignInErrors, signInErrors } from "./form-rules.ts";

interface PasswordSignInFormProps {
  defaultEmail?: string;
  /** Called after signing in; by default the app goes to the page the user came for. */
  onSignedIn?: () => void;
  submitLabel?: string;
  /**
   * After a refused sign-in, offer to resend the confirmation e-mail (or retry the approval): the
   * service answers an unconfirmed address like a wrong password, so the user may need either.
   */
  confirmationHelp?: boolean;
}

export function PasswordSignInForm({
  defaultEmail = "",
  onSignedIn,
  submitLabel = "Sign in",
  confirmationHelp = false,
}: PasswordSignInFormProps) {
  const [values, setValues] = useState({ email: defaultEmail, password: "" });
  // The address of the last refused sign-in, for the confirmation help.
  const [refused, setRefused] = useState<string | null>(null);
  const [errors, setErrors] = useState<ReturnType<typeof signInErrors>>({});
  const form = useRef<HTMLFormElement>(null);
  const next = useNextLocation();
  const navigate = useNavigateWhileMounted();
  const action = useAsyncAction(signIn);

  async function submit(event: FormEvent) {
    event.preventDefault();
    const found = signInErrors(values);
    setErrors(found);
    if (hasErrors(found)) return focusFirstError(form.current, found);
    const email = values.email.trim();
    setRefused(null);
    const result = await action.run({ provider: "local-userpass", username: email, password: values.password });
    if (result.ok) (onSignedIn ?? (() => navigate(next)))();
    else if (isNotConfirmedYet(result.error)) setRefused(email);
  }

  return (
    <>
      <form ref={form} noValidate onSubmit={submit} aria-busy={action.pending}>
        <ErrorMessage>{action.error ? errorMessage(action.error, "sign-in") : null}</ErrorMessage>
        <CredentialsFields values={values} setValues={setValues} errors={errors} />
        <div className="actions">
          <Button type="submit" busy={action.pending}>
            {submitLabel}
          </Button>
          <Link href="/forgot-password">Forgot your password?</Link>
        </div>
      </form>
      {confirmationHelp && refused && config.authConfirmation !== "auto" ? (
        <NotConfirmedHelp key={refused} email={refused} />
      ) : null}
    </>
  );
}

function NotConfirmedHelp({ email }: { email: string }) {
  const [mode, setMode] = useState<ConfirmationMode>(configuredConfirmationMode);
  return (
    <div className="subsection">
      <p>
        {mode === "approval"
          ? `Signed up as ${email}, and the account is still waiting for approval?`
          : `Signed up as ${email}, but the confirmation e-mail did not arrive or its link expired?`}
      </p>
      <ConfirmationHelp email={email} mode={mode} onModeChange={setMode} check={null} checkLabel="" />
    </div>
  );
}

function ApiKeySignInForm() {
  const [key, setKey] = useState("");
  const [errors, setErrors] = useState<ReturnType<typeof apiKeySignInErrors>>({});
  const form = useRef<HTMLFormElement>(null);
  const next = useNextLocation();
  const navigate = useNavigateWhileMounted();
  const action = useAsyncAction(signIn);

  async function submit(event: FormEvent) {
    event.preventDefault();
    const found = apiKeySignInErrors({ key });
    setErrors(found);
    if (hasErrors(found)) return focusFirstError(form.current, found);
    const result = await action.run({ provider: "api-key", key: key.trim() });
    if (result.ok) navigate(next);
  }

  return (
    <form ref={form} noValidate onSubmit={submit} aria-busy={action.pending}>
      <ErrorMessage>{action.error ? errorMessage(action.error, "api-key-sign-in") : null}</ErrorMessage>
      <Field
        label="API key"
        name="key"
        type="password"
        autoComplete="off"
        spellCheck={false}
        required
        hint="A key you created on the API keys page."
        value={key}
        onChange={setKey}
        error={errors.key}
      />
      <div className="actions">
        <Button type="submit" busy={action.pending}>
          Sign in with API key
        </Button>
      </div>
    </form>
  );
}

function AnonymousSignIn() {
  const next = useNextLocation();
  const navigate = useNavigateWhileMounted();
  const session = useSession();
  // As the SDK does, a guest who is still signed in carries on with the same guest account.
  const action = useAsyncAction(async () => {
    if (session.status === "signed-in" && session.anonymous) return;
    await signIn({ provider: "anon-user" });
  });
  return (
    <div>
      <ErrorMessage>{action.error ? errorMessage(action.error) : null}</ErrorMessage>
      <Button
        variant="secondary"
        busy={action.pending}
        onClick={async () => {
          const result = await action.run();
          if (result.ok) navigate(next);
        }}
      >
        Continue without an account
      </Button>
    </div>
  );
}

const reasons: Record<SignOutReason, string> = {
  "signed-out": "You have signed out.",
  expired: "Your session has ended. Please sign in again.",
  deleted: "Your account has been deleted.",
  "other-tab": "You were signed out in another tab.",
};

/** The sign-in page's ways in (`providers`: Google, Apple, Facebook, when the build offers them). */
export function SignInOptions({ providers }: { providers?: ReactNode }) {
  const session = useSession();
  const reason = session.status === "signed-out" && session.reason ? reasons[session.reason] : null;
  return (
    <>
      <StatusMessage>{reason}</StatusMessage>
      {session.status === "signed-in" && session.anonymous ? (
        <p className="message message-info">
          You are using a guest account. Signing in with another account leaves it; to keep its notes,{" "}
          <Link href="/account">add an e-mail address and password</Link> instead.
        </p>
      ) : null}
      <section className="card">
        <h2>With your e-mail address and password</h2>
        <PasswordSignInForm confirmationHelp />
        <p>
          New here? <Link href="/sign-up">Create an account</Link>
        </p>
      </section>
      {providers}
      <section className="card">
        <h2>With an API key</h2>
        <ApiKeySignInForm />
      </section>
      <section className="card">
        <h2>Without an account</h2>
        <p>Try Notes as a guest. You can add an e-mail address and password later to keep your notes.</p>
        <AnonymousSignIn />
      </section>
    </>
  );
}
