import { type FormEvent, type ReactNode, useEffect, useRef, useState } from "react";
import { Button } from "../../../components/button.tsx";
import { Field } from "../../../components/field.tsx";
import { focusFirstError } from "../../../components/focus-first-error.ts";
import { hasErrors } from "../../../lib/validation/rules.ts";
import type { NoteDraft } from "../api/insert-note.ts";
import { bodyMaxLength, noteErrors, titleMaxLength } from "./note-rules.ts";

interface NoteFormProps {
  initial?: NoteDraft;
  submitLabel: string;
  busy: boolean;
  /** Resolves true when saved (the form then empties itself, for a new note). */
  onSubmit: (draft: NoteDraft) => Promise<boolean>;
  onCancel?: () => void;
  cancelLabel?: string;
  /** More buttons, after the submit button. */
  extraActions?: ReactNode;
  resetOnSave?: boolean;
  children?: ReactNode;
  autoFocus?: boolean;
}

/** Title and text of a note, for a new note and for editing one. */
export function NoteForm({
  initial,
  submitLabel,
  busy,
  onSubmit,
  onCancel,
  cancelLabel = "Cancel",
  extraActions,
  resetOnSave = false,
  children,
  autoFocus,
}: NoteFormProps) {
  const [values, setValues] = useState<NoteDraft>(initial ?? { title: "", body: "" });
  const [errors, setErrors] = useState<ReturnType<typeof noteErrors>>({});
  const form = useRef<HTMLFormElement>(null);
  const title = useRef<HTMLInputElement & HTMLTextAreaElement>(null);

  useEffect(() => {
    if (autoFocus) title.current?.focus();
  }, [autoFocus]);

  async function submit(event: FormEvent) {
    event.preventDefault();
    const found = noteErrors(values);
    setErrors(found);
    if (hasErrors(found)) return focusFirstError(form.current, found);
    const saved = await onSubmit({ title: values.title.trim(), body: values.body });
    if (saved && resetOnSave) {
      setValues({ title: "", body: "" });
      title.current?.focus();
    }
  }

  return (
    <form ref={form} noValidate onSubmit={submit} aria-busy={busy} className="note-form">
      {children}
      <Field
        label="Title"
        name="title"
        required
        maxLength={titleMaxLength}
        value={values.title}
        onChange={(title) => setValues((v) => ({ ...v, title }))}
        error={errors.title}
        inputRef={title}
      />
      <Field
        label="Text"
        name="body"
        multiline
        rows={5}
        maxLength={bodyMaxLength}
        value={values.body}
        onChange={(body) => setValues((v) => ({ ...v, body }))}
        error={errors.body}
      />
      <div className="actions">
        <Button type="submit" busy={busy}>
          {submitLabel}
        </Button>
        {extraActions}
        {onCancel ? (
          <Button variant="secondary" onClick={onCancel} disabled={busy}>
            {cancelLabel}
          </Button>
        ) : null}
      </div>
    </form>
  );
}
