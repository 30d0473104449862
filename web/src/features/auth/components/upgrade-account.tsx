import { type FormEvent, useCallback, useEffect, useRef, useState } from "react";
import { Button } from "../../../components/button.tsx";
import { focusFirstError } from "../../../components/focus-first-error.ts";
import { ErrorMessage, StatusMessage } from "../../../components/messages.tsx";
import { onTabMessage } from "../../../lib/broadcast.ts";
import { errorMessage } from "../../../lib/errors/error-message.ts";
import { useAsyncAction } from "../../../lib/hooks/use-async-action.ts";
import { pendingCredentials } from "../../../lib/pending-credentials.ts";
import { useSession } from "../../../lib/session/use-session.ts";
import { hasErrors } from "../../../lib/validation/rules.ts";
import { registerUser } from "../api/register-user.ts";
import { isNotConfirmedYet, linkEmailPassword } from "../hooks/session-actions.ts";
import { ConfirmationHelp, type ConfirmationMode, configuredConfirmationMode } from "./confirmation-help.tsx";
import { CredentialsFields, NewCredentialsFields } from "./credentials-fields.tsx";
import { signInErrors, signUpErrors } from "./form-rules.ts";

type Step = "register" | "confirm" | "link";

/** Links with the password this tab holds; false while the address is not confirmed yet. */
async function linkIfConfirmed(): Promise<boolean> {
  const credentials = pendingCredentials.credentials("upgrade");
  if (!credentials) return false;
  try {
    await linkEmailPassword(credentials.email, credentials.password);
  } catch (error) {
    if (isNotConfirmedYet(error)) return false;
    throw error;
  }
  pendingCredentials.forget("upgrade");
  return true;
}

interface RegisterStepProps {
  onRegistered: () => void;
  onLinked: (email: string) => void;
  onHaveAddress: () => void;
}

function RegisterStep({ onRegistered, onLinked, onHaveAddress }: RegisterStepProps) {
  const [values, setValues] = useState({ email: "", password: "", repeat: "" });
  const [errors, setErrors] = useState<ReturnType<typeof signUpErrors>>({});
  const form = useRef<HTMLFormElement>(null);
  const action = useAsyncAction(async (email: string, password: string) => {
    await registerUser({ email, password });
    pendingCredentials.remember({ email, password, purpose: "upgrade" });
    // Apps that confirm at once let the link happen now.
    if (await linkIfConfirmed()) onLinked(email);
  });

  async function submit(event: FormEvent) {
    event.preventDefault();
    const found = signUpErrors(values);
    setErrors(found);
    if (hasErrors(found)) return focusFirstError(form.current, found);
    const result = await action.run(values.email.trim(), values.password);
    if (result.ok) onRegistered();
  }

  return (
    <form ref={form} noValidate onSubmit={submit} aria-busy={action.pending}>
      <ErrorMessage>{action.error ? errorMessage(action.error, "link") : null}</ErrorMessage>
      <NewCredentialsFields values={values} setValues={setValues} errors={errors} />
      <div className="actions">
        <Button type="submit" busy={action.pending}>
          Add e-mail and password
        </Button>
        <Button variant="link" onClick={onHaveAddress}>
          I already confirmed an address
        </Button>
      </div>
    </form>
  );
}

interface LinkStepProps {
  defaultEmail: string;
  onLinked: (email: string) => void;
  onStartOver: () => void;
}

function LinkStep({ defaultEmail, onLinked, onStartOver }: LinkStepProps) {
  const [values, setValues] = useState({ email: defaultEmail, password: "" });
  const [errors, setErrors] = useState<ReturnType<typeof signInErrors>>({});
  const form = useRef<HTMLFormElement>(null);
  const action = useAsyncAction(linkEmailPassword);

  async function submit(event: FormEvent) {
    event.preventDefault();
    const found = signInErrors(values);
    setErrors(found);
    if (hasErrors(found)) return focusFirstError(form.current, found);
    const result = await action.run(values.email.trim(), values.password);
    if (!result.ok) return;
    pendingCredentials.forget("upgrade");
    onLinked(values.email.trim());
  }

  return (
    <form ref={form} noValidate onSubmit={submit} aria-busy={action.pending}>
      <p>Enter the confirmed address and its password to add them to this account.</p>
      <ErrorMessage>{action.error ? errorMessage(action.error, "link") : null}</ErrorMessage>
      <CredentialsFields values={values} setValues={setValues} errors={errors} />
      <div className="actions">
        <Button type="submit" busy={action.pending}>
          Link e-mail and password
        </Button>
        <Button variant="link" onClick={onStartOver}>
          Start over
        </Button>
      </div>
    </form>
  );
}

/**
 * Turns a guest account into one that signs in with an e-mail address and password: register the
 * address, confirm it, then link it (`login?link=true`) so the notes stay with the same user.
 */
export function UpgradeAccount() {
  const session = useSession();
  const [step, setStep] = useState<Step>(() =>
    pendingCredentials.credentials("upgrade") ? "confirm" : pendingCredentials.email("upgrade") ? "link" : "register",
  );
  const [mode, setMode] = useState<ConfirmationMode>(configuredConfirmationMode);
  const [linkedAs, setLinkedAs] = useState<string | null>(null);
  const anonymous = session.status === "signed-in" && session.anonymous;

  const check = useCallback(async () => {
    const email = pendingCredentials.email("upgrade");
    const done = await linkIfConfirmed();
    if (done) setLinkedAs(email);
    return done;
  }, []);

  // The confirmation link opened in another tab tells this one, which holds the password.
  useEffect(() => {
    if (step !== "confirm") return;
    return onTabMessage((message) => {
      if (message.type === "address-confirmed") void check().catch(() => undefined);
    });
  }, [step, check]);

  if (!anonymous) {
    return linkedAs ? (
      <StatusMessage>Done! Your account now signs in with {linkedAs} and its password.</StatusMessage>
    ) : null;
  }

  const pendingEmail = pendingCredentials.email("upgrade") ?? "";
  return (
    <section aria-labelledby="upgrade-heading" className="card">
      <h2 id="upgrade-heading">Keep your notes: add an e-mail address and password</h2>
      <p>
        You are using a guest account. Add an e-mail address and a password to sign in from anywhere and keep your
        notes.
      </p>
      {step === "register" ? (
        <RegisterStep
          onRegistered={() => setStep("confirm")}
          onLinked={setLinkedAs}
          onHaveAddress={() => setStep("link")}
        />
      ) : step === "confirm" ? (
        <>
          <h3>Confirm your e-mail address</h3>
          {mode === "approval" ? (
            <p>
              The address <strong>{pendingEmail}</strong> is waiting for approval. Once it is approved, finish here.
            </p>
          ) : (
            <p>
              We sent a confirmation link to <strong>{pendingEmail}</strong>. Open it, then finish here (this page
              finishes by itself when the link is opened in this browser).
            </p>
          )}
          <ConfirmationHelp
            email={pendingEmail}
            mode={mode}
            onModeChange={setMode}
            check={check}
            checkLabel="Finish adding e-mail and password"
          />
          <Button
            variant="link"
            onClick={() => {
              pendingCredentials.forget("upgrade");
              setStep("register");
            }}
          >
            Start over
          </Button>
        </>
      ) : (
        <LinkStep
          defaultEmail={pendingEmail}
          onLinked={setLinkedAs}
          onStartOver={() => {
            pendingCredentials.forget("upgrade");
            setStep("register");
          }}
        />
      )}
    </section>
  );
}
