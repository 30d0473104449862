import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { resultKey } from "./oauth-result.ts";
import { OAuthWindowError, openSignInWindow, waitForResult } from "./oauth-window.ts";

function fakeWindow() {
  return { closed: false, location: { href: "about:blank" }, close: vi.fn() } as unknown as Window & {
    closed: boolean;
  };
}

beforeEach(() => {
  vi.useFakeTimers();
  localStorage.clear();
});
afterEach(() => vi.useRealTimers());

describe("the sign-in window", () => {
  it("is reported blocked when the browser opens none", () => {
    vi.spyOn(window, "open").mockReturnValue(null);
    expect(() => openSignInWindow()).toThrow(OAuthWindowError);
  });

  it("goes to the sign-in URL and answers the result the redirect page stores, then closes", async () => {
    const popup = fakeWindow();
    const result = waitForResult(popup, "http://127.0.0.1:4000/login?state=abc", "abc");
    expect(popup.location.href).toBe("http://127.0.0.1:4000/login?state=abc");
    localStorage.setItem(resultKey("abc"), JSON.stringify({ state: "abc", userAuth: "a$b$c$d" }));
    await vi.advanceTimersByTimeAsync(300);
    await expect(result).resolves.toEqual({ state: "abc", userAuth: "a$b$c$d" });
    expect(localStorage.getItem(resultKey("abc"))).toBeNull();
    expect(popup.close).toHaveBeenCalled();
  });

  it("takes a result stored just before the window closed, and rejects when it closed without one", async () => {
    const popup = fakeWindow();
    const stored = waitForResult(popup, "about:blank#1", "one");
    localStorage.setItem(resultKey("one"), JSON.stringify({ state: "one", error: "x" }));
    popup.closed = true;
    await vi.advanceTimersByTimeAsync(300);
    await expect(stored).resolves.toEqual({ state: "one", error: "x" });

    const closed = fakeWindow();
    const none = waitForResult(closed, "about:blank#2", "two");
    closed.closed = true;
    const outcome = expect(none).rejects.toMatchObject({ reason: "closed" });
    await vi.advanceTimersByTimeAsync(300);
    await outcome;
  });
});
