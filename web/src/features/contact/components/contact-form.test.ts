import { describe, expect, it } from "vitest";
import { contactErrors } from "./contact-form.tsx";

describe("contact form validation", () => {
  it("needs a name, a valid e-mail address and a message of at most 5000 characters", () => {
    expect(contactErrors({ user_name: "", user_email: "bob", message: "" })).toEqual({
      user_name: "Enter your name.",
      user_email: "Enter a valid e-mail address, like name@example.com.",
      message: "Write a message.",
    });
    expect(contactErrors({ user_name: "Bob", user_email: "bob@example.com", message: "x".repeat(5001) })).toEqual({
      message: "The message must be at most 5000 characters long.",
    });
  });
});
