/**
 * How the redirect page hands a browser sign-in's result to the window that started it, as the
 * official SDK does: the page reads the fragment the service ends the flow with
 * (`_baas_client_app_id`, `_baas_state`, `_baas_ua`, `_baas_link`, `_baas_error`) and stores it in
 * localStorage under the flow's state; the waiting window reads it (a `storage` event, or its own
 * check) and removes it.
 */

export interface OAuthResult {
  appId?: string;
  state?: string;
  /** `<accessToken>$<refreshToken>$<userId>$<deviceId>`. */
  userAuth?: string;
  link?: string;
  error?: string;
}

const fields: Record<string, keyof OAuthResult> = {
  _baas_client_app_id: "appId",
  _baas_state: "state",
  _baas_ua: "userAuth",
  _baas_link: "link",
  _baas_error: "error",
};

export const resultKey = (state: string) => `notes:oauth2:state(${state})`;

/** The result in a fragment (`#_baas_…=…&…`); values URI-decoded. */
export function parseRedirectFragment(hash: string): OAuthResult {
  const result: OAuthResult = {};
  for (const part of hash.replace(/^#/, "").split("&")) {
    const [key = "", value = ""] = part.split("=");
    const field = fields[key];
    if (!field || value === "") continue;
    try {
      result[field] = decodeURIComponent(value);
    } catch {
      // a malformed value is left out
    }
  }
  return result;
}

/** 12 random lowercase letters, as the SDK makes its states. */
export function newState(): string {
  const letters = "abcdefghijklmnopqrstuvwxyz";
  return Array.from(crypto.getRandomValues(new Uint8Array(12)), (n) => letters[n % 26]).join("");
}

export interface SessionTokens {
  accessToken: string;
  refreshToken: string;
  userId: string;
  deviceId: string;
}

export function decodeUserAuth(userAuth: string | undefined): SessionTokens | null {
  const parts = (userAuth ?? "").split("$");
  if (parts.length !== 4) return null;
  const [accessToken = "", refreshToken = "", userId = "", deviceId = ""] = parts;
  return accessToken && userId ? { accessToken, refreshToken, userId, deviceId } : null;
}
