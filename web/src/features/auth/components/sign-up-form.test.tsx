import { cleanup, render, screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Router } from "wouter";
import { memoryLocation } from "wouter/memory-location";
import { AppServicesRequestError } from "../../../lib/errors/service-errors.ts";
import { registerUser } from "../api/register-user.ts";
import { signIn } from "../hooks/session-actions.ts";
import { SignUpForm } from "./sign-up-form.tsx";

vi.mock("../api/register-user.ts", () => ({ registerUser: vi.fn() }));
vi.mock("../hooks/session-actions.ts", async (original) => ({
  ...(await original<typeof import("../hooks/session-actions.ts")>()),
  signIn: vi.fn(),
}));

function renderForm() {
  const location = memoryLocation({ path: "/sign-up", record: true });
  render(
    <Router hook={location.hook}>
      <SignUpForm />
    </Router>,
  );
  return location;
}

beforeEach(() => {
  vi.mocked(registerUser).mockReset();
  vi.mocked(signIn).mockReset();
});
afterEach(cleanup);

describe("sign-up form", () => {
  it("checks the fields before sending, says what is wrong and moves the focus to the first problem", async () => {
    renderForm();
    const user = userEvent.setup();
    await user.type(screen.getByLabelText("E-mail address"), "ada@example");
    await user.type(screen.getByLabelText("Password"), "123");
    await user.click(screen.getByRole("button", { name: "Create account" }));

    const email = screen.getByLabelText("E-mail address");
    expect(email.getAttribute("aria-invalid")).toBe("true");
    expect(document.activeElement).toBe(email);
    expect(screen.getByText("Enter a valid e-mail address, like name@example.com.")).toBeTruthy();
    expect(screen.getByText("The password must be at least 6 characters long.")).toBeTruthy();
    expect(screen.getByText("Enter the password again.")).toBeTruthy();
    // The error is tied to its field for assistive technology.
    expect(email.getAttribute("aria-describedby")).toContain(
      screen.getByText("Enter a valid e-mail address, like name@example.com.").id,
    );
    expect(registerUser).not.toHaveBeenCalled();
  });

  it("registers, then waits for the confirmation on the check-your-inbox page", async () => {
    vi.mocked(registerUser).mockResolvedValue();
    vi.mocked(signIn).mockRejectedValue(
      new AppServicesRequestError(401, { error: "unauthorized", error_code: "InvalidPassword" }),
    );
    const location = renderForm();
    const user = userEvent.setup();
    await user.type(screen.getByLabelText("E-mail address"), " ada@example.com ");
    await user.type(screen.getByLabelText("Password"), "secret1");
    await user.type(screen.getByLabelText("Repeat the password"), "secret1");
    await user.click(screen.getByRole("button", { name: "Create account" }));

    await vi.waitFor(() => expect(location.history.at(-1)).toBe("/check-inbox"));
    expect(registerUser).toHaveBeenCalledWith({ email: "ada@example.com", password: "secret1" });
  });

  it("shows the service's refusal in plain words and keeps the form", async () => {
    vi.mocked(registerUser).mockRejectedValue(
      new AppServicesRequestError(409, { error: "name already in use", error_code: "AccountNameInUse", link: "x" }),
    );
    renderForm();
    const user = userEvent.setup();
    await user.type(screen.getByLabelText("E-mail address"), "ada@example.com");
    await user.type(screen.getByLabelText("Password"), "secret1");
    await user.type(screen.getByLabelText("Repeat the password"), "secret1");
    await user.click(screen.getByRole("button", { name: "Create account" }));

    const alert = await screen.findByRole("alert");
    expect(alert.textContent).toBe(
      "This e-mail address is already registered. Sign in, or reset your password if you forgot it.",
    );
    expect(document.activeElement).toBe(alert);
    expect(screen.getByRole("button", { name: "Create account" })).toHaveProperty("disabled", false);
  });
});
