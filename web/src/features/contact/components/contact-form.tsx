import { type FormEvent, useRef, useState } from "react";
import { Button } from "../../../components/button.tsx";
import { Field } from "../../../components/field.tsx";
import { focusFirstError } from "../../../components/focus-first-error.ts";
import { ErrorMessage, StatusMessage } from "../../../components/messages.tsx";
import { errorMessage } from "../../../lib/errors/error-message.ts";
import { useAsyncAction } from "../../../lib/hooks/use-async-action.ts";
import { useSession } from "../../../lib/session/use-session.ts";
import { email, hasErrors, maxLength, required, validate } from "../../../lib/validation/rules.ts";
import { sendContactForm } from "../api/send-form.ts";

export const messageMaxLength = 5000;

export function contactErrors(values: { user_name: string; user_email: string; message: string }) {
  return validate(values, {
    user_name: [required("Enter your name."), maxLength(100, "Your name")],
    user_email: [email],
    message: [required("Write a message."), maxLength(messageMaxLength, "The message")],
  });
}

/**
 * The contact form, sent as it is with EmailJS `sendForm` (its field names are the template's). A
 * signed-in user's display name and address are filled in.
 */
export function ContactForm() {
  const session = useSession();
  const known = {
    user_name: (session.status === "signed-in" && session.displayName) || "",
    user_email: (session.status === "signed-in" && session.email) || "",
    message: "",
  };
  const [values, setValues] = useState(known);
  const [errors, setErrors] = useState<ReturnType<typeof contactErrors>>({});
  const [sent, setSent] = useState(false);
  const form = useRef<HTMLFormElement>(null);
  const action = useAsyncAction(sendContactForm);

  async function submit(event: FormEvent) {
    event.preventDefault();
    setSent(false);
    const found = contactErrors(values);
    setErrors(found);
    if (hasErrors(found) || !form.current) return focusFirstError(form.current, found);
    const result = await action.run(form.current);
    if (result.ok) {
      setValues(known);
      setSent(true);
    }
  }

  return (
    <form ref={form} noValidate onSubmit={submit} aria-busy={action.pending}>
      <ErrorMessage>{action.error ? errorMessage(action.error) : null}</ErrorMessage>
      <StatusMessage>{sent ? "Thank you! Your message has been sent. We will reply by e-mail." : null}</StatusMessage>
      <Field
        label="Your name"
        name="user_name"
        autoComplete="name"
        required
        value={values.user_name}
        onChange={(user_name) => setValues((v) => ({ ...v, user_name }))}
        error={errors.user_name}
      />
      <Field
        label="Your e-mail address"
        name="user_email"
        type="email"
        autoComplete="email"
        required
        value={values.user_email}
        onChange={(user_email) => setValues((v) => ({ ...v, user_email }))}
        error={errors.user_email}
      />
      <Field
        label="Message"
        name="message"
        multiline
        rows={6}
        required
        maxLength={messageMaxLength}
        value={values.message}
        onChange={(message) => setValues((v) => ({ ...v, message }))}
        error={errors.message}
      />
      <Button type="submit" busy={action.pending}>
        Send message
      </Button>
    </form>
  );
}
