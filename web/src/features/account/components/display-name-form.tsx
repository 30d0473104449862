import { type FormEvent, useRef, useState } from "react";
import { Button } from "../../../components/button.tsx";
import { Field } from "../../../components/field.tsx";
import { focusFirstError } from "../../../components/focus-first-error.ts";
import { ErrorMessage, StatusMessage } from "../../../components/messages.tsx";
import { errorMessage } from "../../../lib/errors/error-message.ts";
import { useAsyncAction } from "../../../lib/hooks/use-async-action.ts";
import { useSession } from "../../../lib/session/use-session.ts";
import { hasErrors, maxLength, required, validate } from "../../../lib/validation/rules.ts";
import { saveDisplayName } from "../api/save-display-name.ts";

export const displayNameMaxLength = 60;

export function displayNameErrors(values: { displayName: string }) {
  return validate(values, {
    displayName: [required("Enter a display name."), maxLength(displayNameMaxLength, "The display name")],
  });
}

/**
 * Edits the custom user data's display name. Until the user types, the field shows the stored name:
 * the session keeps it across reloads, and a new access token (a page opened by a reload starts
 * without one) brings the latest.
 */
export function DisplayNameForm() {
  const session = useSession();
  const [typed, setTyped] = useState<string | null>(null);
  const displayName = typed ?? (session.status === "signed-in" ? (session.displayName ?? "") : "");
  const [errors, setErrors] = useState<ReturnType<typeof displayNameErrors>>({});
  const [saved, setSaved] = useState(false);
  const form = useRef<HTMLFormElement>(null);
  const action = useAsyncAction(saveDisplayName);

  if (session.status !== "signed-in") return null;
  const userId = session.userId;

  async function submit(event: FormEvent) {
    event.preventDefault();
    setSaved(false);
    const found = displayNameErrors({ displayName });
    setErrors(found);
    if (hasErrors(found)) return focusFirstError(form.current, found);
    const result = await action.run(userId, displayName.trim());
    if (result.ok) setSaved(true);
  }

  return (
    <form ref={form} noValidate onSubmit={submit} aria-busy={action.pending} className="inline-form">
      <ErrorMessage>{action.error ? errorMessage(action.error) : null}</ErrorMessage>
      <StatusMessage>{saved ? "Your display name has been saved." : null}</StatusMessage>
      <Field
        label="Display name"
        name="displayName"
        autoComplete="nickname"
        required
        maxLength={displayNameMaxLength}
        hint="Stored as custom data of your account."
        value={displayName}
        onChange={setTyped}
        error={errors.displayName}
      />
      <Button type="submit" busy={action.pending}>
        Save display name
      </Button>
    </form>
  );
}
