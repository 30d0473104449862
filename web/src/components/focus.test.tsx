/**
 * Where the focus goes: a page's heading after an in-app navigation, back to the opener when a
 * dialog closes, the new key's heading when its secret is shown, the title field after a note is
 * saved (a keyboard user writes the next one at once).
 */
import { cleanup, render, screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { useState } from "react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { NewKeySecret } from "../features/api-keys/components/new-key-secret.tsx";
import { NoteForm } from "../features/notes/components/note-form.tsx";
import { Dialog } from "./dialog.tsx";
import { ErrorMessage } from "./messages.tsx";

afterEach(cleanup);

describe("the focus", () => {
  it("stays where it is on the first page, and goes to the heading of each page after it", async () => {
    // (The page module remembers its first page: a fresh one, whatever the files before rendered.)
    vi.resetModules();
    const { Page } = await import("./page.tsx");
    function Pages() {
      const [title, setTitle] = useState("Notes");
      return (
        <Page title={title}>
          <button type="button" onClick={() => setTitle(title === "Notes" ? "API keys" : "Notes")}>
            Go
          </button>
        </Page>
      );
    }
    render(<Pages />);
    expect(document.title).toBe("Notes · Notes");
    expect(document.activeElement).toBe(document.body);
    await userEvent.setup().click(screen.getByRole("button", { name: "Go" }));
    expect(document.title).toBe("API keys · Notes");
    expect(document.activeElement).toBe(screen.getByRole("heading", { name: "API keys" }));
  });

  it("goes to an error once when it appears, not at each render of the same error", async () => {
    function Form() {
      const [value, setValue] = useState("");
      const [failed, setFailed] = useState(false);
      return (
        <form>
          {/* A new fragment at each render, as forms that link to a page in their error do. */}
          <ErrorMessage>{failed ? <>The link has expired. Ask for a new one.</> : null}</ErrorMessage>
          <input aria-label="New password" value={value} onChange={(event) => setValue(event.target.value)} />
          <button type="button" onClick={() => setFailed(true)}>
            Save
          </button>
        </form>
      );
    }
    render(<Form />);
    const user = userEvent.setup();
    await user.click(screen.getByRole("button", { name: "Save" }));
    expect(document.activeElement).toBe(screen.getByRole("alert"));
    await user.click(screen.getByLabelText("New password"));
    await user.keyboard("abc");
    expect(document.activeElement).toBe(screen.getByLabelText("New password"));
    expect(screen.getByLabelText("New password")).toHaveProperty("value", "abc");
  });

  it("goes back to what opened a dialog once the dialog closes", async () => {
    function Opener() {
      const [open, setOpen] = useState(false);
      return (
        <>
          <button type="button" onClick={() => setOpen(true)}>
            Open
          </button>
          <Dialog open={open} title="Send by e-mail" onClose={() => setOpen(false)}>
            <button type="button" onClick={() => setOpen(false)}>
              Close
            </button>
          </Dialog>
        </>
      );
    }
    render(<Opener />);
    const user = userEvent.setup();
    await user.click(screen.getByRole("button", { name: "Open" }));
    await user.click(screen.getByRole("button", { name: "Close" }));
    expect(screen.queryByText("Send by e-mail")).toBeNull();
    expect(document.activeElement).toBe(screen.getByRole("button", { name: "Open" }));
  });

  it("goes to the new key's heading, so its secret is read out first", () => {
    const apiKey = { _id: "k1", name: "ci", key: "s3cr3t", disabled: false };
    render(<NewKeySecret apiKey={apiKey} onDone={() => {}} />);
    expect(document.activeElement).toBe(screen.getByRole("heading", { name: "Your new API key “ci”" }));
  });

  it("goes back to the title once a note is saved, the form emptied for the next one", async () => {
    const onSubmit = vi.fn(async () => true);
    render(<NoteForm submitLabel="Add note" busy={false} onSubmit={onSubmit} resetOnSave />);
    const user = userEvent.setup();
    const title = screen.getByLabelText("Title");
    await user.type(title, "Shopping");
    await user.click(screen.getByRole("button", { name: "Add note" }));
    expect(onSubmit).toHaveBeenCalledWith({ title: "Shopping", body: "" });
    expect(title).toHaveProperty("value", "");
    expect(document.activeElement).toBe(title);
  });
});
