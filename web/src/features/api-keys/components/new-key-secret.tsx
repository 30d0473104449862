import { useEffect, useId, useRef } from "react";
import { Button } from "../../../components/button.tsx";
import { CopyButton } from "../../../components/copy-button.tsx";
import type { ApiKeyWithSecret } from "../api/create-api-key.ts";

/** The secret of a key just created: shown once, with a copy button. */
export function NewKeySecret({ apiKey, onDone }: { apiKey: ApiKeyWithSecret; onDone: () => void }) {
  const heading = useRef<HTMLHeadingElement>(null);
  const inputId = useId();
  useEffect(() => heading.current?.focus(), []);
  return (
    <section aria-labelledby={`${inputId}-heading`} className="card card-highlight">
      <h2 id={`${inputId}-heading`} tabIndex={-1} ref={heading}>
        Your new API key “{apiKey.name}”
      </h2>
      <p>Copy the key now and keep it somewhere safe: it will not be shown again.</p>
      <div className="field">
        <label htmlFor={inputId}>Secret of the key {apiKey.name}</label>
        <input id={inputId} readOnly value={apiKey.key} className="secret" onFocus={(event) => event.target.select()} />
      </div>
      <div className="actions">
        <CopyButton text={apiKey.key} label="Copy key" />
        <Button variant="secondary" onClick={onDone}>
          I have copied the key
        </Button>
      </div>
    </section>
  );
}
