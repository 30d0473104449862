/**
 * The sign-in window: opened at once on the user's click (a window opened after a wait may be
 * blocked), sent to the sign-in URL, and watched until the redirect page hands the result over or
 * the user closes it.
 */
import { type OAuthResult, resultKey } from "./oauth-result.ts";

export type OAuthFailure = "blocked" | "closed";

/** The window could not be opened, or was closed before the sign-in finished. */
export class OAuthWindowError extends Error {
  constructor(readonly reason: OAuthFailure) {
    super(reason === "blocked" ? "The sign-in window was blocked." : "The sign-in window was closed.");
    this.name = "OAuthWindowError";
  }
}

const checkEveryMs = 250;

export function openSignInWindow(): Window {
  const opened = window.open("about:blank", "notes-sign-in", "popup,width=520,height=720");
  if (!opened) throw new OAuthWindowError("blocked");
  return opened;
}

function takeResult(state: string): OAuthResult | null {
  try {
    const raw = localStorage.getItem(resultKey(state));
    if (raw === null) return null;
    localStorage.removeItem(resultKey(state));
    return JSON.parse(raw) as OAuthResult;
  } catch {
    return null;
  }
}

/** Sends the window to `url` and waits for the result of the flow with this state. */
export function waitForResult(popup: Window, url: string, state: string): Promise<OAuthResult> {
  popup.location.href = url;
  return new Promise((resolve, reject) => {
    const finish = (result: OAuthResult | null) => {
      if (result === null) return false;
      window.removeEventListener("storage", onStorage);
      clearInterval(timer);
      try {
        popup.close();
      } catch {
        // another origin's window: it closes itself
      }
      resolve(result);
      return true;
    };
    const onStorage = (event: StorageEvent) => {
      if (event.key === resultKey(state)) finish(takeResult(state));
    };
    window.addEventListener("storage", onStorage);
    const timer = setInterval(() => {
      if (finish(takeResult(state))) return;
      // The redirect page stores the result before it closes: look once more before giving up.
      if (popup.closed && !finish(takeResult(state))) {
        window.removeEventListener("storage", onStorage);
        clearInterval(timer);
        reject(new OAuthWindowError("closed"));
      }
    }, checkEveryMs);
  });
}
