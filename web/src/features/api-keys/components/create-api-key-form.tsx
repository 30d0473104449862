import { type FormEvent, useRef, useState } from "react";
import { Button } from "../../../components/button.tsx";
import { Field } from "../../../components/field.tsx";
import { focusFirstError } from "../../../components/focus-first-error.ts";
import { ErrorMessage } from "../../../components/messages.tsx";
import { errorMessage } from "../../../lib/errors/error-message.ts";
import { useAsyncAction } from "../../../lib/hooks/use-async-action.ts";
import { apiKeyName, hasErrors, validate } from "../../../lib/validation/rules.ts";
import { type ApiKeyWithSecret, createApiKey } from "../api/create-api-key.ts";

export function apiKeyFormErrors(values: { name: string }) {
  return validate(values, { name: [apiKeyName] });
}

export function CreateApiKeyForm({ onCreated }: { onCreated: (key: ApiKeyWithSecret) => void }) {
  const [name, setName] = useState("");
  const [errors, setErrors] = useState<ReturnType<typeof apiKeyFormErrors>>({});
  const form = useRef<HTMLFormElement>(null);
  const action = useAsyncAction(createApiKey);

  async function submit(event: FormEvent) {
    event.preventDefault();
    const found = apiKeyFormErrors({ name: name.trim() });
    setErrors(found);
    if (hasErrors(found)) return focusFirstError(form.current, found);
    const result = await action.run(name.trim());
    if (result.ok) {
      setName("");
      onCreated(result.value);
    }
  }

  return (
    <form ref={form} noValidate onSubmit={submit} aria-busy={action.pending} className="inline-form">
      <ErrorMessage>{action.error ? errorMessage(action.error) : null}</ErrorMessage>
      <Field
        label="Key name"
        name="name"
        autoComplete="off"
        spellCheck={false}
        required
        hint="Letters, digits, underscores (_) and hyphens (-), for example ci-runner."
        value={name}
        onChange={setName}
        error={errors.name}
      />
      <Button type="submit" busy={action.pending}>
        Create key
      </Button>
    </form>
  );
}
