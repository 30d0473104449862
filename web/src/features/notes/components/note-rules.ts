import { maxLength, required, validate } from "../../../lib/validation/rules.ts";

export const titleMaxLength = 200;
export const bodyMaxLength = 20_000;

export function noteErrors(values: { title: string; body: string }) {
  return validate(values, {
    title: [required("Give the note a title."), maxLength(titleMaxLength, "The title")],
    body: [maxLength(bodyMaxLength, "The text")],
  });
}
