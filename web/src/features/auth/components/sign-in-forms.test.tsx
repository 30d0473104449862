import { act, cleanup, render, screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Route, Router, Switch } from "wouter";
import { memoryLocation } from "wouter/memory-location";
import { deferred } from "../../../test/fakes.ts";
import { signIn } from "../hooks/session-actions.ts";
import { PasswordSignInForm } from "./sign-in-forms.tsx";

vi.mock("../hooks/session-actions.ts", async (original) => ({
  ...(await original<typeof import("../hooks/session-actions.ts")>()),
  signIn: vi.fn(),
}));

/** The sign-in page among others, as the app's router has it. */
function renderPages() {
  const location = memoryLocation({ path: "/sign-in", record: true });
  render(
    <Router hook={location.hook}>
      <Switch>
        <Route path="/sign-in">
          <PasswordSignInForm />
        </Route>
        <Route>
          <p>another page</p>
        </Route>
      </Switch>
    </Router>,
  );
  return location;
}

async function submit() {
  const user = userEvent.setup();
  await user.type(screen.getByLabelText("E-mail address"), "ada@example.com");
  await user.type(screen.getByLabelText("Password"), "secret1");
  await user.click(screen.getByRole("button", { name: "Sign in" }));
}

beforeEach(() => vi.mocked(signIn).mockReset());
afterEach(cleanup);

describe("password sign-in form", () => {
  it("goes to the page the user came for once signed in", async () => {
    vi.mocked(signIn).mockResolvedValue();
    const location = renderPages();
    await submit();
    await vi.waitFor(() => expect(location.history.at(-1)).toBe("/notes"));
    expect(signIn).toHaveBeenCalledWith({
      provider: "local-userpass",
      username: "ada@example.com",
      password: "secret1",
    });
  });

  it("leaves the user where they went while the sign-in was ending", async () => {
    // The session is signed in before signIn ends (it reads the profile after), so the page's
    // guard has already moved on and the user can click elsewhere in the meantime.
    const ending = deferred<void>();
    vi.mocked(signIn).mockReturnValue(ending.promise);
    const location = renderPages();
    await submit();
    act(() => location.navigate("/account"));
    expect(screen.getByText("another page")).toBeTruthy();

    await act(async () => ending.resolve());
    expect(location.history.at(-1)).toBe("/account");
    expect(location.history).not.toContain("/notes");
  });
});
