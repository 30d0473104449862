/**
 * The services' own input rules, checked before sending so the user hears about a mistake at once
 * (App Services: e-mail shape, passwords of 6–128 characters, API key names of ASCII letters,
 * digits, `_` and `-`). Each rule returns a sentence for the field, or null when the value is fine.
 */

export type Rule = (value: string) => string | null;

// One @ with something on both sides and a dot in the domain, no spaces: what the service accepts.
const emailPattern = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
export const emailMaxLength = 254;
export const passwordMinLength = 6;
export const passwordMaxLength = 128;
const apiKeyNamePattern = /^[A-Za-z0-9_-]+$/;

/** An e-mail address, with the sentence to say when it is missing. */
export function emailAddress(missing: string): Rule {
  return (value) => {
    if (value.trim() === "") return missing;
    if (!emailPattern.test(value.trim()) || value.trim().length > emailMaxLength) {
      return "Enter a valid e-mail address, like name@example.com.";
    }
    return null;
  };
}

export const email: Rule = emailAddress("Enter your e-mail address.");

export const password: Rule = (value) => {
  if (value === "") return "Enter a password.";
  if (value.length < passwordMinLength) return `The password must be at least ${passwordMinLength} characters long.`;
  if (value.length > passwordMaxLength) return `The password must be at most ${passwordMaxLength} characters long.`;
  return null;
};

export const apiKeyName: Rule = (value) => {
  if (value === "") return "Enter a name for the key.";
  if (!apiKeyNamePattern.test(value))
    return "Use only letters, digits, underscores (_) and hyphens (-), without spaces.";
  return null;
};

export function required(message: string): Rule {
  return (value) => (value.trim() === "" ? message : null);
}

export function maxLength(limit: number, what: string): Rule {
  return (value) => (value.length > limit ? `${what} must be at most ${limit} characters long.` : null);
}

export function matches(other: string, message: string): Rule {
  return (value) => (value !== other ? message : null);
}

/** The first failing rule's message. */
export function check(value: string, ...rules: Rule[]): string | null {
  for (const rule of rules) {
    const message = rule(value);
    if (message) return message;
  }
  return null;
}

export type FieldErrors<F extends string> = Partial<Record<F, string>>;

/** Runs each field's rules; returns only the fields with a problem. */
export function validate<F extends string>(values: Record<F, string>, rules: Record<F, Rule[]>): FieldErrors<F> {
  const errors: FieldErrors<F> = {};
  for (const field of Object.keys(rules) as F[]) {
    const message = check(values[field], ...rules[field]);
    if (message) errors[field] = message;
  }
  return errors;
}

export function hasErrors<F extends string>(errors: FieldErrors<F>): boolean {
  return Object.keys(errors).length > 0;
}
