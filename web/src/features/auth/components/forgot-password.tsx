import { type FormEvent, useRef, useState } from "react";
import { Link } from "wouter";
import { Button } from "../../../components/button.tsx";
import { Field } from "../../../components/field.tsx";
import { focusFirstError } from "../../../components/focus-first-error.ts";
import { ErrorMessage, StatusMessage } from "../../../components/messages.tsx";
import { config } from "../../../config/env.ts";
import { errorMessage } from "../../../lib/errors/error-message.ts";
import { AppServicesRequestError } from "../../../lib/errors/service-errors.ts";
import { useAsyncAction } from "../../../lib/hooks/use-async-action.ts";
import { hasErrors } from "../../../lib/validation/rules.ts";
import { callResetPasswordFunction } from "../api/call-reset-password-function.ts";
import { sendResetPasswordEmail } from "../api/send-reset-password-email.ts";
import { isNotConfirmedYet, signIn } from "../hooks/session-actions.ts";
import { EmailField, NewPasswordField } from "./credentials-fields.tsx";
import { resetWithAnswerErrors } from "./form-rules.ts";
import { useSendToAddress } from "./send-to-address.ts";

type Mode = "email" | "answer";

/** A reply that names the other way of resetting (the configuration said otherwise): the page switches. */
const saysOtherMode = (error: unknown, fragment: string) =>
  error instanceof AppServicesRequestError && error.serviceMessage.includes(fragment);

function ResetLinkForm({
  email,
  setEmail,
  notice,
  onUseAnswer,
}: {
  email: string;
  setEmail: (email: string) => void;
  notice: string | null;
  onUseAnswer: (notice: string) => void;
}) {
  const { errors, sentTo, form, action, submit } = useSendToAddress(sendResetPasswordEmail, email, (error) => {
    if (saysOtherMode(error, "via function")) onUseAnswer(errorMessage(error, "reset"));
  });

  return (
    <form ref={form} noValidate onSubmit={submit} aria-busy={action.pending}>
      <ErrorMessage>{action.error ? errorMessage(action.error, "reset") : notice}</ErrorMessage>
      <StatusMessage>
        {sentTo ? `We sent a password reset link to ${sentTo}. It is valid for 30 minutes.` : null}
      </StatusMessage>
      <EmailField value={email} onChange={setEmail} error={errors.email} />
      <div className="actions">
        <Button type="submit" busy={action.pending}>
          Send reset link
        </Button>
      </div>
    </form>
  );
}

type AnswerOutcome = "signed-in" | "pending";

/**
 * The reset function's reply is the same whether it changed the password or left the reset
 * waiting for approval; signing in with the new password tells which (and saves a step).
 */
async function resetWithAnswer(email: string, password: string, answer: string): Promise<AnswerOutcome> {
  await callResetPasswordFunction({ email, password, arguments: [answer] });
  try {
    await signIn({ provider: "local-userpass", username: email, password });
    return "signed-in";
  } catch (error) {
    if (isNotConfirmedYet(error)) return "pending";
    throw error;
  }
}

function SecurityAnswerForm({
  initialEmail,
  onUseEmail,
  notice,
}: {
  initialEmail: string;
  onUseEmail: (email: string, notice: string) => void;
  notice: string | null;
}) {
  const [values, setValues] = useState({ email: initialEmail, password: "", answer: "" });
  const [errors, setErrors] = useState<ReturnType<typeof resetWithAnswerErrors>>({});
  const [outcome, setOutcome] = useState<AnswerOutcome | null>(null);
  const form = useRef<HTMLFormElement>(null);
  const action = useAsyncAction(resetWithAnswer);

  async function submit(event: FormEvent) {
    event.preventDefault();
    const found = resetWithAnswerErrors(values);
    setErrors(found);
    if (hasErrors(found)) return focusFirstError(form.current, found);
    setOutcome(null);
    const result = await action.run(values.email.trim(), values.password, values.answer.trim());
    if (result.ok) setOutcome(result.value);
    else if (saysOtherMode(result.error, "via email")) onUseEmail(values.email, errorMessage(result.error, "reset"));
  }

  if (outcome === "signed-in") {
    return (
      <StatusMessage>
        Your password has been changed and you are signed in. <Link href="/notes">Go to your notes</Link>
      </StatusMessage>
    );
  }
  return (
    <form ref={form} noValidate onSubmit={submit} aria-busy={action.pending}>
      <ErrorMessage>{action.error ? errorMessage(action.error, "reset") : notice}</ErrorMessage>
      <StatusMessage>
        {outcome === "pending"
          ? "Your request is waiting for approval. Once it is approved, sign in with your new password."
          : null}
      </StatusMessage>
      <EmailField
        value={values.email}
        onChange={(email) => setValues((v) => ({ ...v, email }))}
        error={errors.email}
        existing
      />
      <NewPasswordField
        label="New password"
        value={values.password}
        onChange={(password) => setValues((v) => ({ ...v, password }))}
        error={errors.password}
      />
      <Field
        label="Security answer"
        name="answer"
        autoComplete="off"
        required
        hint="The answer to the security question you chose."
        value={values.answer}
        onChange={(answer) => setValues((v) => ({ ...v, answer }))}
        error={errors.answer}
      />
      <div className="actions">
        <Button type="submit" busy={action.pending}>
          Reset password
        </Button>
      </div>
    </form>
  );
}

/**
 * Forgot password: a reset link by e-mail, or (apps with a reset function) a security answer — the
 * one the configuration names (VITE_AUTH_RESET); a reply naming the other switches over.
 */
export function ForgotPassword() {
  const [mode, setMode] = useState<Mode>(config.authReset === "function" ? "answer" : "email");
  const [notice, setNotice] = useState<string | null>(null);
  // The address typed in one form carries over to the other.
  const [email, setEmail] = useState("");
  return mode === "email" ? (
    <ResetLinkForm
      email={email}
      setEmail={setEmail}
      notice={notice}
      onUseAnswer={(why) => {
        setNotice(why);
        setMode("answer");
      }}
    />
  ) : (
    <SecurityAnswerForm
      initialEmail={email}
      notice={notice}
      onUseEmail={(typed, why) => {
        setEmail(typed);
        setNotice(why);
        setMode("email");
      }}
    />
  );
}
