/** The auth forms' checks, with the service's own rules (lib/validation). */
import {
  check,
  email,
  type FieldErrors,
  matches,
  password,
  required,
  validate,
} from "../../../lib/validation/rules.ts";

export function signInErrors(values: { email: string; password: string }): FieldErrors<"email" | "password"> {
  return validate(values, { email: [email], password: [required("Enter your password.")] });
}

export function apiKeySignInErrors(values: { key: string }): FieldErrors<"key"> {
  return validate(values, { key: [required("Enter your API key.")] });
}

export function newPasswordErrors(values: { password: string; repeat: string }): FieldErrors<"password" | "repeat"> {
  const errors: FieldErrors<"password" | "repeat"> = validate(values, { password: [password], repeat: [] });
  const repeat = check(
    values.repeat,
    required("Enter the password again."),
    matches(values.password, "The passwords do not match."),
  );
  if (repeat) errors.repeat = repeat;
  return errors;
}

export function signUpErrors(values: {
  email: string;
  password: string;
  repeat: string;
}): FieldErrors<"email" | "password" | "repeat"> {
  return { ...validate({ email: values.email }, { email: [email] }), ...newPasswordErrors(values) };
}

export function emailErrors(values: { email: string }): FieldErrors<"email"> {
  return validate(values, { email: [email] });
}

export function resetWithAnswerErrors(values: {
  email: string;
  password: string;
  answer: string;
}): FieldErrors<"email" | "password" | "answer"> {
  return validate(values, {
    email: [email],
    password: [password],
    answer: [required("Enter the answer to your security question.")],
  });
}
