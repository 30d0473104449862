import { describe, expect, it } from "vitest";
import { ConfigError, parseConfig } from "./env.ts";

describe("configuration", () => {
  it("defaults to the local emulator", () => {
    expect(parseConfig({})).toEqual({
      appServicesBaseUrl: "http://127.0.0.1:4000",
      appServicesAppId: "local-app",
      emailJsOrigin: "http://127.0.0.1:4000",
      emailJsPublicKey: "local-public-key",
      emailJsServiceId: "local_service",
      emailJsContactTemplateId: "contact_form",
      emailJsNoteTemplateId: "note_email",
      authConfirmation: "email",
      authReset: "email",
      authProviders: "",
    });
  });

  it("takes the OAuth 2.0 providers the deployment enables, in order, and refuses others", () => {
    expect(parseConfig({ VITE_AUTH_PROVIDERS: "facebook, google" }).authProviders).toBe("facebook,google");
    expect(parseConfig({ VITE_AUTH_PROVIDERS: "none" }).authProviders).toBe("");
    expect(() => parseConfig({ VITE_AUTH_PROVIDERS: "google,twitter" })).toThrow(
      'VITE_AUTH_PROVIDERS may only name google, apple, facebook (comma-separated), or none: not twitter (got "google,twitter").',
    );
    expect(() => parseConfig({ VITE_AUTH_PROVIDERS: "apple,apple" })).toThrow("names a provider twice");
  });

  it("takes the auth modes the deployment names, and refuses others", () => {
    const config = parseConfig({ VITE_AUTH_CONFIRMATION: "function" }, { VITE_AUTH_RESET: "function" });
    expect(config.authConfirmation).toBe("function");
    expect(config.authReset).toBe("function");
    expect(parseConfig({ VITE_AUTH_CONFIRMATION: "auto" }).authConfirmation).toBe("auto");
    expect(() => parseConfig({ VITE_AUTH_RESET: "auto" })).toThrow(
      'VITE_AUTH_RESET must be "email" or "function" (got "auto").',
    );
    expect(() => parseConfig({ VITE_AUTH_CONFIRMATION: "mail" })).toThrow(
      'VITE_AUTH_CONFIRMATION must be "email", "function" or "auto" (got "mail").',
    );
  });

  it("takes later sources first, trims URLs of their trailing slashes and ignores empty values", () => {
    const config = parseConfig(
      { VITE_APP_SERVICES_BASE_URL: "https://services.cloud.mongodb.com/", VITE_APP_SERVICES_APP_ID: "notes-abcde" },
      { VITE_APP_SERVICES_APP_ID: "app-3f9a2c1b", VITE_EMAILJS_ORIGIN: "" },
    );
    expect(config.appServicesBaseUrl).toBe("https://services.cloud.mongodb.com");
    expect(config.appServicesAppId).toBe("app-3f9a2c1b");
    expect(config.emailJsOrigin).toBe("http://127.0.0.1:4000");
  });

  it("lists every problem with the variable's name", () => {
    let error: unknown;
    try {
      parseConfig({
        VITE_APP_SERVICES_BASE_URL: "services.example",
        VITE_EMAILJS_ORIGIN: "ftp://x",
        VITE_APP_SERVICES_APP_ID: "no spaces",
      });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const { problems } = error as ConfigError;
    expect(problems).toHaveLength(3);
    expect(problems[0]).toMatch(/^VITE_APP_SERVICES_BASE_URL must be an absolute URL/);
    expect(problems[1]).toMatch(/^VITE_APP_SERVICES_APP_ID must be letters/);
    expect(problems[2]).toMatch(/^VITE_EMAILJS_ORIGIN must start with http/);
  });
});
