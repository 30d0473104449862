import { describe, expect, it } from "vitest";
import { decodeUserAuth, newState, parseRedirectFragment } from "./oauth-result.ts";

describe("the browser sign-in's result", () => {
  it("reads the service's fragment as the official SDK does (URI-decoded, unknown keys ignored)", () => {
    const hash =
      "#_baas_client_app_id=local-app&_baas_state=abcdefghijkl&_baas_ua=a.b.c%24r.s.t%2465a1%24d1&_baas_link=ok&other=x";
    expect(parseRedirectFragment(hash)).toEqual({
      appId: "local-app",
      state: "abcdefghijkl",
      userAuth: "a.b.c$r.s.t$65a1$d1",
      link: "ok",
    });
    expect(
      parseRedirectFragment("#_baas_state=s&_baas_error=error%20from%20OAuth2%20provider%3A%20access_denied"),
    ).toEqual({
      state: "s",
      error: "error from OAuth2 provider: access_denied",
    });
    expect(parseRedirectFragment("#_baas_state=%E0%A4%A")).toEqual({});
  });

  it("splits the tokens into their four parts (a link's refresh token is empty)", () => {
    expect(decodeUserAuth("at$rt$uid$did")).toEqual({
      accessToken: "at",
      refreshToken: "rt",
      userId: "uid",
      deviceId: "did",
    });
    expect(decodeUserAuth("at$$uid$did")?.refreshToken).toBe("");
    expect(decodeUserAuth("at$rt$uid")).toBeNull();
    expect(decodeUserAuth(undefined)).toBeNull();
  });

  it("makes states of 12 lowercase letters", () => {
    expect(newState()).toMatch(/^[a-z]{12}$/);
    expect(newState()).not.toBe(newState());
  });
});
