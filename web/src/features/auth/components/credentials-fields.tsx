import { Field } from "../../../components/field.tsx";
import { passwordMaxLength, passwordMinLength } from "../../../lib/validation/rules.ts";

export interface NewCredentials {
  email: string;
  password: string;
  repeat: string;
}

/**
 * The address field of the auth forms. `existing`: the address of an account that exists (signing
 * in, linking, resetting with an answer), which password managers fill as the username; else an
 * address to use (signing up, a new link).
 */
export function EmailField({
  value,
  onChange,
  error,
  existing = false,
}: {
  value: string;
  onChange: (email: string) => void;
  error: string | undefined;
  existing?: boolean;
}) {
  return (
    <Field
      label="E-mail address"
      name="email"
      type="email"
      autoComplete={existing ? "username" : "email"}
      required
      value={value}
      onChange={onChange}
      error={error}
    />
  );
}

export interface Credentials {
  email: string;
  password: string;
}

/** The address and the password of an existing account: the fields of signing in and of linking it. */
export function CredentialsFields({
  values,
  setValues,
  errors,
}: {
  values: Credentials;
  setValues: (update: (values: Credentials) => Credentials) => void;
  errors: Partial<Record<keyof Credentials, string>>;
}) {
  return (
    <>
      <EmailField
        value={values.email}
        onChange={(email) => setValues((v) => ({ ...v, email }))}
        error={errors.email}
        existing
      />
      <Field
        label="Password"
        name="password"
        type="password"
        autoComplete="current-password"
        required
        value={values.password}
        onChange={(password) => setValues((v) => ({ ...v, password }))}
        error={errors.password}
      />
    </>
  );
}

/** The address, a new password and its repetition: the fields of signing up and of adding a password to a guest. */
export function NewCredentialsFields({
  values,
  setValues,
  errors,
}: {
  values: NewCredentials;
  setValues: (update: (values: NewCredentials) => NewCredentials) => void;
  errors: Partial<Record<keyof NewCredentials, string>>;
}) {
  return (
    <>
      <EmailField value={values.email} onChange={(email) => setValues((v) => ({ ...v, email }))} error={errors.email} />
      <NewPasswordFields values={values} setValues={setValues} errors={errors} />
    </>
  );
}

/** A new password, with the rules it must meet (alone where no repetition is asked: a reset by answer). */
export function NewPasswordField({
  label,
  value,
  onChange,
  error,
}: {
  label: string;
  value: string;
  onChange: (password: string) => void;
  error?: string;
}) {
  return (
    <Field
      label={label}
      name="password"
      type="password"
      autoComplete="new-password"
      required
      hint={`Between ${passwordMinLength} and ${passwordMaxLength} characters.`}
      value={value}
      onChange={onChange}
      error={error}
    />
  );
}

/** A new password and its repetition (signing up, adding a password to a guest, a reset). */
export function NewPasswordFields<V extends { password: string; repeat: string }>({
  values,
  setValues,
  errors,
  labels = ["Password", "Repeat the password"],
}: {
  values: V;
  setValues: (update: (values: V) => V) => void;
  errors: { password?: string; repeat?: string };
  labels?: [password: string, repeat: string];
}) {
  return (
    <>
      <NewPasswordField
        label={labels[0]}
        value={values.password}
        onChange={(password) => setValues((v) => ({ ...v, password }))}
        error={errors.password}
      />
      <Field
        label={labels[1]}
        name="repeat"
        type="password"
        autoComplete="new-password"
        required
        value={values.repeat}
        onChange={(repeat) => setValues((v) => ({ ...v, repeat }))}
        error={errors.repeat}
      />
    </>
  );
}
