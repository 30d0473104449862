/** Moves the focus to the first field (in form order) that has a problem. */
export function focusFirstError(form: HTMLFormElement | null, errors: Record<string, string | undefined>): void {
  if (!form) return;
  for (const element of Array.from(form.elements)) {
    const name = (element as HTMLInputElement).name;
    if (name && errors[name]) {
      (element as HTMLElement).focus();
      return;
    }
  }
}
