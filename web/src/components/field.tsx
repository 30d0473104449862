import { type ChangeEvent, type Ref, useId } from "react";

interface FieldProps {
  label: string;
  name: string;
  value: string;
  onChange: (value: string) => void;
  error?: string | undefined;
  hint?: string;
  type?: "text" | "email" | "password" | "search";
  autoComplete?: string;
  required?: boolean;
  multiline?: boolean;
  rows?: number;
  maxLength?: number;
  readOnly?: boolean;
  disabled?: boolean;
  inputRef?: Ref<HTMLInputElement & HTMLTextAreaElement>;
  spellCheck?: boolean;
}

/** A labelled input or textarea with its hint and error tied to it for assistive technology. */
export function Field({
  label,
  name,
  value,
  onChange,
  error,
  hint,
  type = "text",
  multiline = false,
  rows = 4,
  inputRef,
  required,
  ...rest
}: FieldProps) {
  const id = useId();
  const hintId = hint ? `${id}-hint` : undefined;
  const errorId = error ? `${id}-error` : undefined;
  const describedBy = [hintId, errorId].filter(Boolean).join(" ") || undefined;
  const common = {
    id,
    name,
    value,
    required,
    "aria-invalid": error ? true : undefined,
    "aria-describedby": describedBy,
    onChange: (event: ChangeEvent<HTMLInputElement | HTMLTextAreaElement>) => onChange(event.target.value),
    ref: inputRef,
    ...rest,
  };
  return (
    <div className={error ? "field field-invalid" : "field"}>
      <label htmlFor={id}>
        {label}
        {required ? null : <span className="optional"> (optional)</span>}
      </label>
      {hint ? (
        <p className="hint" id={hintId}>
          {hint}
        </p>
      ) : null}
      {multiline ? <textarea rows={rows} {...common} /> : <input type={type} {...common} />}
      {error ? (
        <p className="field-error" id={errorId}>
          {error}
        </p>
      ) : null}
    </div>
  );
}
