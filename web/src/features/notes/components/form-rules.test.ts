import { describe, expect, it } from "vitest";
import { emailNoteErrors } from "./email-note-dialog.tsx";
import { noteErrors } from "./note-rules.ts";

describe("notes forms' validation", () => {
  it("a note needs a title of at most 200 characters; its text is optional", () => {
    expect(noteErrors({ title: " ", body: "" })).toEqual({ title: "Give the note a title." });
    expect(noteErrors({ title: "x".repeat(201), body: "" })).toEqual({
      title: "The title must be at most 200 characters long.",
    });
    expect(noteErrors({ title: "Groceries", body: "" })).toEqual({});
  });

  it("e-mailing a note needs a recipient and a name; the reply-to address is optional but checked", () => {
    expect(emailNoteErrors({ to: "", name: "", replyTo: "" })).toEqual({
      to: "Enter the recipient's e-mail address.",
      name: "Enter your name.",
    });
    expect(emailNoteErrors({ to: "friend@example.com", name: "Ada", replyTo: "not-an-address" })).toEqual({
      replyTo: "Enter a valid e-mail address, like name@example.com.",
    });
  });
});
