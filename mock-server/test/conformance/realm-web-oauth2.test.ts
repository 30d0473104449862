/**
 * realm-web 2.0.1, unchanged, signing in with Google, Apple and Facebook against the emulator and
 * its fake identity provider.
 *
 * The token flows run in Node. The browser flow runs in a real Chromium page (playwright-core with
 * the machine's browser), not jsdom: realm-web opens a window (`window.open`), waits for the
 * redirect page to hand the result over through localStorage (`storage` events reach only other
 * windows) and polls `window.closed`; the flow crosses origins (the app's page, the emulator, the
 * provider's page) and a link is a credentialed cross-origin `fetch` that reads a response header
 * through CORS. jsdom has none of these, so faking them would test the fakes.
 */
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import type { FastifyInstance } from "fastify";
import { type Browser, chromium, type Page } from "playwright-core";
import * as Realm from "realm-web";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain ESM script without types
import { findBrowser } from "../../../scripts/ensure-browser.mjs";
import { listening } from "../helpers/listen.ts";

let app: FastifyInstance;
let url: string;
let counter = 0;

beforeAll(async () => {
  ({ app, url } = await listening());
});
afterAll(() => app.close());

async function control(path: string, body?: unknown) {
  const response = await fetch(`${url}/_mock/v1${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: { "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return (await response.json()) as Record<string, any>;
}

async function freshApp(config: Record<string, unknown> = {}) {
  const appId = `realm-web-oauth2-${++counter}`;
  await control("/apps", { appId, config });
  return { appId, realm: new Realm.App({ id: appId, baseUrl: url }) };
}

const mint = (appId: string, request: Record<string, unknown>) =>
  control(`/apps/${appId}/identity-provider/tokens`, { email: "ada@example.com", name: "Ada Lovelace", ...request });

describe("realm-web 2.0.1 token flows", () => {
  it("Credentials.google({ idToken }), google({ authCode }), apple(idToken), facebook(accessToken)", async () => {
    const { appId, realm } = await freshApp();
    const google = await mint(appId, { provider: "oauth2-google", kind: "id_token" });
    const user = await realm.logIn(Realm.Credentials.google({ idToken: google.token }));
    expect(user.providerType).toBe("oauth2-google");
    expect(user.identities[0]).toMatchObject({ id: google.sub, providerType: "oauth2-google" });
    expect(user.profile).toMatchObject({ name: "Ada Lovelace", email: "ada@example.com" });

    const code = await mint(appId, { provider: "oauth2-google", kind: "authCode" });
    expect((await realm.logIn(Realm.Credentials.google({ authCode: code.token }))).id).toBe(user.id);

    const apple = await mint(appId, { provider: "oauth2-apple", kind: "id_token", email: "grace@example.com" });
    const appleUser = await realm.logIn(Realm.Credentials.apple(apple.token));
    expect(appleUser.identities[0]).toMatchObject({ id: apple.sub, providerType: "oauth2-apple" });

    const facebook = await mint(appId, { provider: "oauth2-facebook", kind: "accessToken", email: "lin@example.com" });
    const fbUser = await realm.logIn(Realm.Credentials.facebook(facebook.token));
    expect(fbUser.profile.email).toBe("lin@example.com");
  });

  it("surfaces a refused token as the service's error, and links with linkCredentials", async () => {
    const { appId, realm } = await freshApp();
    const expired = await mint(appId, { provider: "oauth2-google", kind: "id_token", expiresInSeconds: -1 });
    await expect(realm.logIn(Realm.Credentials.google({ idToken: expired.token }))).rejects.toMatchObject({
      statusCode: 401,
      errorCode: "AuthError",
      error: "invalid OAuth 2.0 token: token is expired",
    });
    const guest = await realm.logIn(Realm.Credentials.anonymous());
    const apple = await mint(appId, { provider: "oauth2-apple", kind: "id_token" });
    await guest.linkCredentials(Realm.Credentials.apple(apple.token));
    expect(guest.identities.map((i) => i.providerType)).toEqual(["anon-user", "oauth2-apple"]);
  });
});

/** The app's pages: realm-web's own bundle, a page that signs in, and the redirect page. */
function appPages(): Promise<{ server: Server; origin: string }> {
  const bundle = readFileSync(createRequire(import.meta.url).resolve("realm-web/dist/bundle.iife.js"), "utf8");
  const page = (script: string) =>
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>realm-web</title><script src="/realm-web.js"></script></head><body><script>${script}</script></body></html>`;
  const server = createServer((request, response) => {
    const path = request.url?.split("?")[0];
    if (path === "/realm-web.js") return response.writeHead(200, { "content-type": "text/javascript" }).end(bundle);
    if (path === "/app.html") return response.writeHead(200, { "content-type": "text/html" }).end(page(""));
    // realm-web's documented redirect page: hand the result to the window that opened this one.
    if (path === "/callback.html")
      return response.writeHead(200, { "content-type": "text/html" }).end(page("Realm.handleAuthRedirect();"));
    response.writeHead(404).end();
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({ server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }),
    ),
  );
}

describe("realm-web 2.0.1 browser flow in Chromium", () => {
  let browser: Browser;
  let pages: { server: Server; origin: string };

  beforeAll(async () => {
    const executablePath = findBrowser();
    if (!executablePath) throw new Error("No Chromium found: run `node scripts/ensure-browser.mjs`.");
    browser = await chromium.launch({
      executablePath,
      args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"],
    });
    pages = await appPages();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    pages?.server.close();
  });

  /** A page of the app, with realm-web's App pointed at the emulator and the app's redirect allowed. */
  async function appPage(): Promise<{ page: Page; appId: string; redirectUrl: string }> {
    const redirectUrl = `${pages.origin}/callback.html`;
    const redirectUris = { redirectUris: [redirectUrl] };
    const { appId } = await freshApp({
      providers: { "oauth2-google": redirectUris, "oauth2-apple": redirectUris, "oauth2-facebook": redirectUris },
    });
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${pages.origin}/app.html`);
    await page.evaluate(
      ([id, baseUrl]) => {
        (window as any).app = new (window as any).Realm.App({ id, baseUrl });
      },
      [appId, url] as const,
    );
    return { page, appId, redirectUrl };
  }

  /** Starts `app.logIn` with a provider's redirect credentials; the outcome, and the provider's window. */
  async function startLogIn(page: Page, provider: "google" | "apple" | "facebook", redirectUrl: string) {
    const popup = page.waitForEvent("popup");
    const outcome = page.evaluate(
      async ([which, redirect]) => {
        const { Realm } = window as any;
        const credentials =
          which === "google" ? Realm.Credentials.google({ redirectUrl: redirect }) : Realm.Credentials[which](redirect);
        try {
          const user = await (window as any).app.logIn(credentials);
          return { id: user.id as string, providerType: user.providerType as string, email: user.profile.email };
        } catch (error) {
          return { error: (error as Error).message };
        }
      },
      [provider, redirectUrl] as const,
    );
    return { outcome, popup: await popup };
  }

  it.each(["google", "apple", "facebook"] as const)(
    "app.logIn(Credentials.%s(redirectUrl)): the provider's window, a new account, the user",
    async (provider) => {
      const { page, redirectUrl } = await appPage();
      const { outcome, popup } = await startLogIn(page, provider, redirectUrl);
      await popup.getByLabel("E-mail address").fill("ada@example.com");
      await popup.getByLabel("Name").fill("Ada Lovelace");
      await popup.getByRole("button", { name: "Add account and continue" }).click();
      const result = await outcome;
      expect(result).toMatchObject({ providerType: `oauth2-${provider}`, email: "ada@example.com" });
      // realm-web closed the window once it had the result.
      await expect.poll(() => popup.isClosed()).toBe(true);

      // A returning account: chosen from the list, the same user.
      const second = await startLogIn(page, provider, redirectUrl);
      await second.popup.getByRole("button", { name: /ada@example\.com/ }).click();
      expect(((await second.outcome) as { id: string }).id).toBe((result as { id: string }).id);
      await page.context().close();
    },
  );

  it("rejects when the window is closed, or the sign-in cancelled (realm-web 2.0.1 cannot read _baas_error)", async () => {
    const { page, redirectUrl } = await appPage();
    const closed = await startLogIn(page, "google", redirectUrl);
    await closed.popup.close();
    expect(await closed.outcome).toEqual({ error: "Window closed" });

    const cancelled = await startLogIn(page, "google", redirectUrl);
    await cancelled.popup.getByRole("button", { name: "Cancel" }).click();
    // The fragment carries _baas_error and the state; realm-web 2.0.1 then fails to decode the
    // missing _baas_ua instead of showing the error.
    expect(await cancelled.outcome).toEqual({ error: "Failed to decode 'authInfo' into ids and tokens" });
    await page.context().close();
  });

  it("user.linkCredentials(Credentials.google(redirectUrl)): a credentialed fetch, X-BAAS-Location, the window", async () => {
    const { page, appId, redirectUrl } = await appPage();
    const popup = page.waitForEvent("popup");
    const linked = page.evaluate(async (redirect) => {
      const { Realm } = window as any;
      const user = await (window as any).app.logIn(Realm.Credentials.anonymous());
      await user.linkCredentials(Realm.Credentials.google({ redirectUrl: redirect }));
      return { id: user.id as string, identities: user.identities.map((i: any) => i.providerType) as string[] };
    }, redirectUrl);
    const window_ = await popup;
    await window_.getByLabel("E-mail address").fill("grace@example.com");
    await window_.getByRole("button", { name: "Add account and continue" }).click();
    const result = await linked;
    expect(result.identities).toEqual(["anon-user", "oauth2-google"]);
    const users = await control(`/apps/${appId}/users`);
    expect(users.users).toHaveLength(1);
    expect(users.users[0].id).toBe(result.id);
    await page.context().close();
  });
});
