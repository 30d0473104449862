import { Field } from "../../../components/field.tsx";
import { passwordMaxLength, passwordMinLength } from "../../../lib/validation/rules.ts";

export interface NewCredentials {
  email: string;
  password: string;
  repeat: string;
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
      <Field
        label="E-mail address"
        name="email"
        type="email"
        autoComplete="username"
        required
        value={values.email}
        onChange={(email) => setValues((v) => ({ ...v, email }))}
        error={errors.email}
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
      <Field
        label="E-mail address"
        name="email"
        type="email"
        autoComplete="email"
        required
        value={values.email}
        onChange={(email) => setValues((v) => ({ ...v, email }))}
        error={errors.email}
      />
      <Field
        label="Password"
        name="password"
        type="password"
        autoComplete="new-password"
        required
        hint={`Between ${passwordMinLength} and ${passwordMaxLength} characters.`}
        value={values.password}
        onChange={(password) => setValues((v) => ({ ...v, password }))}
        error={errors.password}
      />
      <Field
        label="Repeat the password"
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
