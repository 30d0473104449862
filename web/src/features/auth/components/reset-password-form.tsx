import { type FormEvent, useRef, useState } from "react";
import { Link } from "wouter";
import { Button } from "../../../components/button.tsx";
import { focusFirstError } from "../../../components/focus-first-error.ts";
import { ErrorMessage, StatusMessage } from "../../../components/messages.tsx";
import { errorMessage } from "../../../lib/errors/error-message.ts";
import { AppServicesRequestError } from "../../../lib/errors/service-errors.ts";
import { useAsyncAction } from "../../../lib/hooks/use-async-action.ts";
import { hasErrors } from "../../../lib/validation/rules.ts";
import { resetPassword } from "../api/reset-password.ts";
import { useLinkToken } from "../hooks/use-link-token.ts";
import { NewPasswordFields } from "./credentials-fields.tsx";
import { newPasswordErrors } from "./form-rules.ts";

const isLinkProblem = (error: unknown) =>
  error instanceof AppServicesRequestError &&
  (error.code === "UserpassTokenInvalid" || error.serviceMessage.includes("invalid token data"));

/** The page the reset e-mail links to: `/reset-password?token=…&tokenId=…`. */
export function ResetPasswordForm() {
  const { token, tokenId } = useLinkToken();
  const [values, setValues] = useState({ password: "", repeat: "" });
  const [errors, setErrors] = useState<ReturnType<typeof newPasswordErrors>>({});
  const [done, setDone] = useState(false);
  const form = useRef<HTMLFormElement>(null);
  const action = useAsyncAction(resetPassword);

  if (!token || !tokenId) {
    return (
      <ErrorMessage focus={false}>
        This reset link is incomplete. Open the link from the e-mail again, or{" "}
        <Link href="/forgot-password">ask for a new reset link</Link>.
      </ErrorMessage>
    );
  }

  if (done) {
    return (
      <StatusMessage>
        Your password has been changed. <Link href="/sign-in">Sign in with your new password</Link>
      </StatusMessage>
    );
  }

  async function submit(event: FormEvent) {
    event.preventDefault();
    if (!token || !tokenId) return;
    const found = newPasswordErrors(values);
    setErrors(found);
    if (hasErrors(found)) return focusFirstError(form.current, found);
    const result = await action.run({ token, tokenId, password: values.password });
    if (result.ok) setDone(true);
  }

  return (
    <form ref={form} noValidate onSubmit={submit} aria-busy={action.pending}>
      <ErrorMessage>
        {action.error ? (
          <>
            {errorMessage(action.error, "reset")}
            {isLinkProblem(action.error) ? (
              <>
                {" "}
                <Link href="/forgot-password">Ask for a new reset link</Link>
              </>
            ) : null}
          </>
        ) : null}
      </ErrorMessage>
      <NewPasswordFields
        values={values}
        setValues={setValues}
        errors={errors}
        labels={["New password", "Repeat the new password"]}
      />
      <Button type="submit" busy={action.pending}>
        Save new password
      </Button>
    </form>
  );
}
