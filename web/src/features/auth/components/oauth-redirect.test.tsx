import { cleanup, render, screen } from "@testing-library/react";
import { StrictMode } from "react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { resultKey } from "../hooks/oauth-result.ts";
import { OAuthRedirect } from "./oauth-redirect.tsx";

beforeEach(() => {
  localStorage.clear();
  vi.spyOn(window, "close").mockImplementation(() => undefined);
});
afterEach(() => {
  cleanup();
  window.history.replaceState(null, "", "/");
});

describe("the redirect page of a provider sign-in", () => {
  it("hands the fragment's result to the waiting window, takes the tokens out of the address, and closes", () => {
    window.history.replaceState(
      null,
      "",
      "/auth/callback#_baas_client_app_id=local-app&_baas_state=abc&_baas_ua=a%24r%24u%24d",
    );
    render(
      <StrictMode>
        <OAuthRedirect />
      </StrictMode>,
    );
    expect(JSON.parse(localStorage.getItem(resultKey("abc"))!)).toEqual({
      appId: "local-app",
      state: "abc",
      userAuth: "a$r$u$d",
    });
    expect(window.location.hash).toBe("");
    expect(window.close).toHaveBeenCalledTimes(1);
    expect(screen.getByRole("status").textContent).toBe("Finishing signing in… You can close this window.");
  });

  it("says so when there is no sign-in to finish", () => {
    window.history.replaceState(null, "", "/auth/callback");
    render(<OAuthRedirect />);
    expect(screen.getByRole("alert").textContent).toContain("there is no sign-in to finish here");
    expect(screen.getByRole("link", { name: "Go to the sign-in page" })).toBeTruthy();
    expect(window.close).not.toHaveBeenCalled();
  });
});
