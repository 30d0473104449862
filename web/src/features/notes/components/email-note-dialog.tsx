import { type FormEvent, useRef, useState } from "react";
import { Button } from "../../../components/button.tsx";
import { Dialog } from "../../../components/dialog.tsx";
import { Field } from "../../../components/field.tsx";
import { focusFirstError } from "../../../components/focus-first-error.ts";
import { ErrorMessage } from "../../../components/messages.tsx";
import { errorMessage } from "../../../lib/errors/error-message.ts";
import { useAsyncAction } from "../../../lib/hooks/use-async-action.ts";
import {
  check,
  email,
  emailAddress,
  type FieldErrors,
  hasErrors,
  maxLength,
  required,
  validate,
} from "../../../lib/validation/rules.ts";
import type { Note } from "../api/notes-ejson.ts";
import { sendNoteEmail } from "../api/send-email.ts";

export function emailNoteErrors(values: {
  to: string;
  name: string;
  replyTo: string;
}): FieldErrors<"to" | "name" | "replyTo"> {
  const errors: FieldErrors<"to" | "name" | "replyTo"> = validate(
    { to: values.to, name: values.name },
    {
      to: [emailAddress("Enter the recipient's e-mail address.")],
      name: [required("Enter your name."), maxLength(100, "Your name")],
    },
  );
  const replyTo = values.replyTo.trim() === "" ? null : check(values.replyTo, email);
  if (replyTo) errors.replyTo = replyTo;
  return errors;
}

interface EmailNoteDialogProps {
  note: Note | null;
  /** The signed-in user's display name, for "Your name". */
  defaultName: string;
  defaultReplyTo: string;
  onClose: () => void;
  onSent: (to: string) => void;
}

/** "E-mail this note": the note goes out through the EmailJS note template. */
export function EmailNoteDialog({ note, defaultName, defaultReplyTo, onClose, onSent }: EmailNoteDialogProps) {
  return (
    <Dialog open={note !== null} title={note ? `E-mail “${note.title}”` : "E-mail a note"} onClose={onClose}>
      {note ? (
        <EmailNoteForm
          note={note}
          defaultName={defaultName}
          defaultReplyTo={defaultReplyTo}
          onClose={onClose}
          onSent={onSent}
        />
      ) : null}
    </Dialog>
  );
}

function EmailNoteForm({ note, defaultName, defaultReplyTo, onClose, onSent }: EmailNoteDialogProps & { note: Note }) {
  const [values, setValues] = useState({ to: "", name: defaultName, replyTo: defaultReplyTo });
  const [errors, setErrors] = useState<ReturnType<typeof emailNoteErrors>>({});
  const form = useRef<HTMLFormElement>(null);
  const action = useAsyncAction(sendNoteEmail);

  async function submit(event: FormEvent) {
    event.preventDefault();
    const found = emailNoteErrors(values);
    setErrors(found);
    if (hasErrors(found)) return focusFirstError(form.current, found);
    const to = values.to.trim();
    const result = await action.run({
      to_email: to,
      note_title: note.title,
      note_body: note.body,
      from_name: values.name.trim(),
      reply_to: values.replyTo.trim(),
    });
    if (result.ok) onSent(to);
  }

  return (
    <form ref={form} noValidate onSubmit={submit} aria-busy={action.pending}>
      <ErrorMessage>{action.error ? errorMessage(action.error) : null}</ErrorMessage>
      <Field
        label="Recipient's e-mail address"
        name="to"
        type="email"
        autoComplete="off"
        required
        value={values.to}
        onChange={(to) => setValues((v) => ({ ...v, to }))}
        error={errors.to}
      />
      <Field
        label="Your name"
        name="name"
        autoComplete="name"
        required
        value={values.name}
        onChange={(name) => setValues((v) => ({ ...v, name }))}
        error={errors.name}
      />
      <Field
        label="Your e-mail address for replies"
        name="replyTo"
        type="email"
        autoComplete="email"
        value={values.replyTo}
        onChange={(replyTo) => setValues((v) => ({ ...v, replyTo }))}
        error={errors.replyTo}
      />
      <div className="actions">
        <Button type="submit" busy={action.pending}>
          Send e-mail
        </Button>
        <Button variant="secondary" onClick={onClose} disabled={action.pending}>
          Cancel
        </Button>
      </div>
    </form>
  );
}
