import { describe, expect, it } from "vitest";
import {
  apiKeySignInErrors,
  emailErrors,
  newPasswordErrors,
  resetWithAnswerErrors,
  signInErrors,
  signUpErrors,
} from "./form-rules.ts";

describe("auth forms' validation", () => {
  it("sign up: e-mail format, 6–128 character password, repeated", () => {
    expect(signUpErrors({ email: "", password: "", repeat: "" })).toEqual({
      email: "Enter your e-mail address.",
      password: "Enter a password.",
      repeat: "Enter the password again.",
    });
    expect(signUpErrors({ email: "ada@example", password: "12345", repeat: "12345" })).toEqual({
      email: "Enter a valid e-mail address, like name@example.com.",
      password: "The password must be at least 6 characters long.",
    });
    expect(signUpErrors({ email: "ada@example.com", password: "secret1", repeat: "secret2" })).toEqual({
      repeat: "The passwords do not match.",
    });
    expect(signUpErrors({ email: "ada@example.com", password: "secret1", repeat: "secret1" })).toEqual({});
  });

  it("sign in: an e-mail address and any password", () => {
    expect(signInErrors({ email: "ada@example.com", password: "x" })).toEqual({});
    expect(signInErrors({ email: "ada", password: "" })).toEqual({
      email: "Enter a valid e-mail address, like name@example.com.",
      password: "Enter your password.",
    });
    expect(apiKeySignInErrors({ key: " " })).toEqual({ key: "Enter your API key." });
  });

  it("new password (reset link) and reset with a security answer", () => {
    expect(newPasswordErrors({ password: "x".repeat(129), repeat: "x".repeat(129) })).toEqual({
      password: "The password must be at most 128 characters long.",
    });
    expect(resetWithAnswerErrors({ email: "ada@example.com", password: "secret1", answer: "" })).toEqual({
      answer: "Enter the answer to your security question.",
    });
    expect(emailErrors({ email: "a b@example.com" })).toEqual({
      email: "Enter a valid e-mail address, like name@example.com.",
    });
  });
});
