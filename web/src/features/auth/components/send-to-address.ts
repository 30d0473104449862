import { type FormEvent, useRef, useState } from "react";
import { focusFirstError } from "../../../components/focus-first-error.ts";
import { useAsyncAction } from "../../../lib/hooks/use-async-action.ts";
import { hasErrors } from "../../../lib/validation/rules.ts";
import { emailErrors } from "./form-rules.ts";

/**
 * A form of one address that asks the service to send something there (a new confirmation link, a
 * reset link): the address checked first, then sent, and where it went kept for the page to say;
 * `onRefused` hears the service's refusal.
 */
export function useSendToAddress(
  send: (email: string) => Promise<void>,
  email: string,
  onRefused?: (error: unknown) => void,
) {
  const [errors, setErrors] = useState<ReturnType<typeof emailErrors>>({});
  const [sentTo, setSentTo] = useState<string | null>(null);
  const form = useRef<HTMLFormElement>(null);
  const action = useAsyncAction(send);
  async function submit(event: FormEvent) {
    event.preventDefault();
    const found = emailErrors({ email });
    setErrors(found);
    if (hasErrors(found)) return focusFirstError(form.current, found);
    setSentTo(null);
    const result = await action.run(email.trim());
    if (result.ok) setSentTo(email.trim());
    else onRefused?.(result.error);
  }
  return { errors, sentTo, form, action, submit };
}
