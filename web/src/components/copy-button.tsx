import { useState } from "react";
import { Button } from "./button.tsx";
import { StatusMessage } from "./messages.tsx";

/** Copies a text to the clipboard and says whether it worked. */
export function CopyButton({ text, label }: { text: string; label: string }) {
  const [outcome, setOutcome] = useState<"copied" | "failed" | null>(null);
  return (
    <>
      <Button
        variant="secondary"
        onClick={async () => {
          try {
            await navigator.clipboard.writeText(text);
            setOutcome("copied");
          } catch {
            setOutcome("failed");
          }
        }}
      >
        {label}
      </Button>
      <StatusMessage>
        {outcome === "copied"
          ? "Copied to the clipboard."
          : outcome === "failed"
            ? "Copying is not allowed here. Select the text and copy it yourself."
            : null}
      </StatusMessage>
    </>
  );
}
