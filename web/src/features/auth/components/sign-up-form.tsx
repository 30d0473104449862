import { type FormEvent, useRef, useState } from "react";
import { Link } from "wouter";
import { Button } from "../../../components/button.tsx";
import { focusFirstError } from "../../../components/focus-first-error.ts";
import { ErrorMessage } from "../../../components/messages.tsx";
import { errorMessage } from "../../../lib/errors/error-message.ts";
import { useAsyncAction } from "../../../lib/hooks/use-async-action.ts";
import { useNavigateWhileMounted } from "../../../lib/hooks/use-navigate-while-mounted.ts";
import { pendingCredentials } from "../../../lib/pending-credentials.ts";
import { useSession } from "../../../lib/session/use-session.ts";
import { hasErrors } from "../../../lib/validation/rules.ts";
import { registerUser } from "../api/register-user.ts";
import { isNotConfirmedYet, signIn } from "../hooks/session-actions.ts";
import { NewCredentialsFields } from "./credentials-fields.tsx";
import { signUpErrors } from "./form-rules.ts";

type Outcome = "signed-in" | "pending";

/**
 * Registers the address, then tries to sign in straight away: that works when the app confirms
 * addresses automatically or its confirmation function approves at once. Otherwise the address
 * waits for its confirmation link (or for approval) on the "check your inbox" page.
 */
async function signUp(email: string, password: string): Promise<Outcome> {
  await registerUser({ email, password });
  pendingCredentials.remember({ email, password, purpose: "sign-up" });
  try {
    await signIn({ provider: "local-userpass", username: email, password });
  } catch (error) {
    if (isNotConfirmedYet(error)) return "pending";
    throw error;
  }
  pendingCredentials.forget("sign-up");
  return "signed-in";
}

export function SignUpForm() {
  const [values, setValues] = useState({ email: "", password: "", repeat: "" });
  const [errors, setErrors] = useState<ReturnType<typeof signUpErrors>>({});
  const form = useRef<HTMLFormElement>(null);
  const navigate = useNavigateWhileMounted();
  const action = useAsyncAction(signUp);
  const session = useSession();
  const guest = session.status === "signed-in" && session.anonymous;

  async function submit(event: FormEvent) {
    event.preventDefault();
    const found = signUpErrors(values);
    setErrors(found);
    if (hasErrors(found)) return focusFirstError(form.current, found);
    const result = await action.run(values.email.trim(), values.password);
    if (result.ok) navigate(result.value === "signed-in" ? "/notes" : "/check-inbox");
  }

  return (
    <form ref={form} noValidate onSubmit={submit} aria-busy={action.pending}>
      {guest ? (
        <p className="message message-info">
          You are using a guest account. A new account starts empty; to keep your notes,{" "}
          <Link href="/account">add an e-mail address and password to your guest account</Link> instead.
        </p>
      ) : null}
      <ErrorMessage>{action.error ? errorMessage(action.error) : null}</ErrorMessage>
      <NewCredentialsFields values={values} setValues={setValues} errors={errors} />
      <div className="actions">
        <Button type="submit" busy={action.pending}>
          Create account
        </Button>
        <Link href="/sign-in">I already have an account</Link>
      </div>
    </form>
  );
}
