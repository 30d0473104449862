/**
 * What the @production journeys have besides the page: the site, the mail its SMTP server received,
 * the rehearsal's faults (scripts/rehearse.mjs), and accounts made through the public API. Pages
 * talk to the site only: EmailJS (the one other origin the app uses, and the only one its
 * Content-Security-Policy allows) is unreachable, so nothing leaves the machine; and a page that
 * breaks the site's Content-Security-Policy fails its test.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type APIRequestContext, test as base, expect, type Page } from "@playwright/test";

export { signIn, signUp } from "../fixtures/sign-in.ts";

function setting(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the journeys with \`npm run rehearse\``);
  return value;
}

export const site = setting("REHEARSAL_SITE");
export const appId = setting("REHEARSAL_APP_ID");
const control = setting("REHEARSAL_CONTROL");
const mailDir = setting("REHEARSAL_MAIL_DIR");
export const clientApi = `${site}/api/client/v2.0/app/${appId}`;
/** The instances' control token: an operator's, for the inspector at an instance's own address. */
export const controlToken = setting("REHEARSAL_CONTROL_TOKEN");
/** The fake identity provider's tenant the instances use as Google, Apple and Facebook (a process of its own). */
export const identityProvider = setting("REHEARSAL_IDENTITY_PROVIDER");

export interface Mail {
  to: string[];
  subject: string;
  text: string;
  receivedAt: string;
}

/** The messages the SMTP server received, read from its folder. */
export class Mailbox {
  all(): Mail[] {
    return readdirSync(mailDir)
      .filter((name) => name.endsWith(".json") && !name.startsWith("."))
      .sort()
      .map((name) => JSON.parse(readFileSync(join(mailDir, name), "utf8")) as Mail);
  }

  /** The messages to `to`. */
  to(to: string): Mail[] {
    return this.all().filter((m) => m.to.includes(to));
  }

  /** The newest message to `to` whose subject matches, waiting for it to arrive. */
  async latest(to: string, subject: RegExp, { after = 0, timeout = 10_000 } = {}): Promise<Mail> {
    const find = () =>
      this.to(to)
        .filter((m) => subject.test(m.subject) && Date.parse(m.receivedAt) >= after)
        .at(-1);
    await expect.poll(() => find() !== undefined, { message: `mail to ${to} (${subject})`, timeout }).toBe(true);
    return find()!;
  }

  /** The first link in a message's text to one of the site's pages. */
  static link(mail: Mail, path: "/confirm" | "/reset-password"): string {
    const link = mail.text.match(/https:\/\/\S+/g)?.find((url) => url.startsWith(`${site}${path}?`));
    if (!link) throw new Error(`no link to ${site}${path} in: ${mail.text}`);
    return link;
  }
}

export interface Instance {
  name: string;
  url: string;
  metricsUrl: string;
  running: boolean;
}

/** The deployment's faults, and what its instances say about themselves. */
export class Rehearsal {
  private async post(path: string) {
    const response = await fetch(`${control}${path}`, { method: "POST" });
    if (response.status !== 204) throw new Error(`${path}: ${response.status} ${await response.text()}`);
  }

  async instances(): Promise<Instance[]> {
    return (await (await fetch(`${control}/instances`)).json()) as Instance[];
  }

  kill = (name: string) => this.post(`/instances/${name}/kill`);
  start = (name: string) => this.post(`/instances/${name}/start`);
  stopDatabase = () => this.post("/postgres/stop");
  startDatabase = () => this.post("/postgres/start");
  stopMailServer = () => this.post("/smtp/stop");
  startMailServer = () => this.post("/smtp/start");
  /** A step of a rotation of the instances' token secret, each instance restarted in turn. */
  rotateSigningSecret = (step: "accept-next" | "sign-next" | "drop-previous") => this.post(`/signing-secret/${step}`);

  /** A metric of each running instance (the first sample of `pattern`, a line of its metrics). */
  private async metric(pattern: RegExp): Promise<Record<string, number>> {
    const values: Record<string, number> = {};
    for (const instance of await this.instances()) {
      if (!instance.running) continue;
      const text = await (await fetch(instance.metricsUrl)).text();
      values[instance.name] = Number(pattern.exec(text)?.[1]);
    }
    return values;
  }

  /** Change streams open on each running instance, from its metrics. */
  openStreams = () => this.metric(/^appservices_change_streams_open (\S+)$/m);

  /** SMTP deliveries the instances have tried and will try again (the server refused or could not be reached). */
  async mailRetries(): Promise<number> {
    const counts = await this.metric(/^appservices_mail_delivery_attempts_total\{outcome="retry"\} (\S+)$/m);
    return Object.values(counts).reduce((sum, n) => sum + (Number.isNaN(n) ? 0 : n), 0);
  }

  /** Requests whose token a fallback secret signed, on the running instances since they started. */
  async fallbackTokenUses(): Promise<number> {
    const access = await this.metric(/^appservices_fallback_token_uses_total\{type="access"\} (\S+)$/m);
    const refresh = await this.metric(/^appservices_fallback_token_uses_total\{type="refresh"\} (\S+)$/m);
    return [...Object.values(access), ...Object.values(refresh)].reduce((sum, n) => sum + n, 0);
  }

  /** Messages waiting for SMTP delivery (the instances share the outbox: any one's count). */
  async queuedMail(): Promise<number> {
    return Math.max(...Object.values(await this.metric(/^appservices_mail_outbox_queued (\S+)$/m)));
  }
}

let accounts = 0;

/** An address nobody used in this run. */
export function newAddress(who: string): string {
  accounts += 1;
  return `${who}.${Date.now().toString(36)}${accounts}@example.com`;
}

/** Registers an address through the client API and confirms it with the link mailed to it. */
export async function confirmedAccount(request: APIRequestContext, mailbox: Mailbox, who: string) {
  const email = newAddress(who);
  const password = `pw-${email}`;
  const registered = await request.post(`${clientApi}/auth/providers/local-userpass/register`, {
    data: { email, password },
  });
  expect(registered.status()).toBe(201);
  const link = new URL(Mailbox.link(await mailbox.latest(email, /Confirm/), "/confirm"));
  const confirmed = await request.post(`${clientApi}/auth/providers/local-userpass/confirm`, {
    data: { token: link.searchParams.get("token"), tokenId: link.searchParams.get("tokenId") },
  });
  expect(confirmed.status()).toBe(200);
  return { email, password };
}

export const liveOn = "Live updates are on: changes made elsewhere appear here.";

/** Adds a note; if the site answers with a failure, says so and the user tries again (`retries` times). */
export async function addNote(page: Page, title: string, { retries = 0 } = {}) {
  await page.getByLabel("Title").fill(title);
  for (let attempt = 0; ; attempt++) {
    await page.getByRole("button", { name: "Add note" }).click();
    const added = page.getByRole("status").filter({ hasText: `The note “${title}” has been added.` });
    const failed = page.getByRole("region", { name: "New note" }).getByRole("alert");
    await expect(added.or(failed)).toBeVisible();
    if (await added.isVisible()) return attempt;
    if (attempt >= retries) throw new Error(`adding “${title}” failed: ${await failed.textContent()}`);
  }
}

/** A note on the page, by its title. */
export const note = (page: Page, title: string) => page.getByRole("heading", { level: 3, name: title });

/**
 * Gives a user, through the client API with its access token, a profile (the notes app's custom
 * user data) with `displayName` whose canonical Extended JSON is 16 KiB: the most an access token
 * carries (strings only, so its text is its JSON).
 */
export async function giveLargestCustomData(
  request: APIRequestContext,
  { userId, accessToken }: { userId: string; accessToken: string },
  displayName: string,
) {
  const profile = { _id: `profile-${userId}`, user_id: userId, display_name: displayName, about: "" };
  profile.about = "x".repeat(16 * 1024 - JSON.stringify(profile).length);
  const stored = await request.post(`${clientApi}/functions/call`, {
    headers: { authorization: `Bearer ${accessToken}` },
    data: {
      name: "insertOne",
      service: "mongodb-atlas",
      arguments: [{ database: "notes-app", collection: "profiles", document: profile }],
    },
  });
  expect(stored.status()).toBe(200);
}

export const test = base.extend<{ mailbox: Mailbox; rehearsal: Rehearsal }>({
  mailbox: async ({}, use) => {
    await use(new Mailbox());
  },
  rehearsal: async ({}, use) => {
    await use(new Rehearsal());
  },
  context: async ({ context }, use) => {
    await context.route("https://api.emailjs.com/**", (route) => route.abort("connectionrefused"));
    const violations: string[] = [];
    context.on("console", (message) => {
      if (message.type() === "error" && /Content Security Policy/i.test(message.text()))
        violations.push(message.text());
    });
    await use(context);
    expect(violations, "Content-Security-Policy violations").toEqual([]);
  },
});

export { expect };
