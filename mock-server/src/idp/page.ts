/**
 * The fake identity provider's pages: the account picker (the accounts seen before, "Use another
 * account" with e-mail and name, Cancel) and the page that posts an answer back (Sign in with
 * Apple's `form_post`). Plain HTML forms that work without scripts, with one heading per section,
 * labelled fields, buttons named by what they do, an error that is announced and tied to its
 * field — usable with the keyboard and a screen reader. Every value is escaped.
 */
import { randomBytes } from "node:crypto";
import type { FastifyReply } from "fastify";
import type { OAuth2ProviderName } from "../config/app-config.ts";
import { providerLabels } from "./fake-identity-provider.ts";
import { type AuthorizationParams, authorizationParamNames, type IdpAccount } from "./tenant.ts";

const escapeHtml = (value: string) =>
  value.replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] as string,
  );

const styles = `
  :root { color-scheme: light dark; font-family: system-ui, sans-serif; line-height: 1.5; }
  body { margin: 0; display: grid; place-items: start center; min-height: 100vh; background: Canvas; color: CanvasText; }
  main { width: min(30rem, 100% - 2rem); margin: 2rem 0; }
  .badge { font-size: .85rem; border: 1px solid currentColor; border-radius: 1rem; display: inline-block; padding: 0 .6rem; }
  h1 { margin: .5rem 0; font-size: 1.6rem; }
  h2 { font-size: 1.15rem; margin: 1.5rem 0 .5rem; }
  ul { list-style: none; padding: 0; margin: 0; display: grid; gap: .5rem; }
  button { font: inherit; padding: .6rem 1rem; border-radius: .4rem; border: 1px solid currentColor; background: ButtonFace; color: ButtonText; cursor: pointer; }
  .account { width: 100%; text-align: start; display: grid; }
  .account .email { font-size: .9rem; }
  label { display: block; margin-top: .75rem; font-weight: 600; }
  input { font: inherit; width: 100%; box-sizing: border-box; padding: .5rem; margin-top: .25rem; }
  .actions { margin-top: 1rem; display: flex; gap: .75rem; flex-wrap: wrap; }
  .error { color: #b00020; font-weight: 600; }
  :focus-visible { outline: 3px solid #1a73e8; outline-offset: 2px; }
`;

function hidden(params: AuthorizationParams): string {
  return authorizationParamNames
    .filter((name) => params[name] !== undefined)
    .map((name) => `<input type="hidden" name="${name}" value="${escapeHtml(params[name]!)}">`)
    .join("");
}

function document(title: string, body: string, nonce?: string): string {
  const script = nonce ? ` 'nonce-${nonce}'` : "";
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src${script || " 'none'"}; form-action *; base-uri 'none'">
<title>${escapeHtml(title)}</title>
<style>${styles}</style>
</head>
<body>
${body}
</body>
</html>`;
}

export interface PickerPage {
  provider: OAuth2ProviderName;
  params: AuthorizationParams;
  accounts: IdpAccount[];
  /** A problem with the "another account" form, shown and announced. */
  error?: { message: string; email: string; name: string };
}

export function pickerPage({ provider, params, accounts, error }: PickerPage): string {
  const label = providerLabels[provider];
  const fields = hidden(params);
  const list =
    accounts.length === 0
      ? "<p>No accounts yet: add one below.</p>"
      : `<ul>${accounts
          .map(
            (a) =>
              `<li><form method="post" action="authorize">${fields}<input type="hidden" name="choice" value="account"><input type="hidden" name="email" value="${escapeHtml(a.email)}"><button type="submit" class="account"><span class="name">${escapeHtml(a.name)}</span> <span class="email">${escapeHtml(a.email)}</span></button></form></li>`,
          )
          .join("")}</ul>`;
  const invalid = error ? ` aria-invalid="true" aria-describedby="email-error"` : "";
  const problem = error ? `<p id="email-error" class="error" role="alert">${escapeHtml(error.message)}</p>` : "";
  const body = `<main>
<p class="badge">Fake identity provider of the App Services emulator</p>
<h1>Sign in with ${label}</h1>
<p>to continue to <strong>${escapeHtml(params.client_id ?? "")}</strong>. This page stands in for ${label}: no real account is used and no password is asked.</p>
<section aria-labelledby="accounts-heading">
<h2 id="accounts-heading">Choose an account</h2>
${list}
</section>
<section aria-labelledby="another-heading">
<h2 id="another-heading">Use another account</h2>
<form method="post" action="authorize" novalidate>${fields}<input type="hidden" name="choice" value="new">
${problem}
<label for="email">E-mail address</label>
<input id="email" name="email" type="email" autocomplete="email" required value="${escapeHtml(error?.email ?? "")}"${invalid}>
<label for="name">Name</label>
<input id="name" name="name" type="text" autocomplete="name" value="${escapeHtml(error?.name ?? "")}">
<div class="actions"><button type="submit">Add account and continue</button></div>
</form>
</section>
<form method="post" action="authorize" class="actions">${fields}<input type="hidden" name="choice" value="cancel"><button type="submit">Cancel</button></form>
</main>`;
  return document(`Sign in with ${label} (fake identity provider)`, body);
}

/** Posts the answer to the client's redirect URI (`response_mode=form_post`), with a button if scripts are off. */
export function formPostPage(provider: OAuth2ProviderName, action: string, fields: Record<string, string>): string {
  const nonce = randomBytes(12).toString("base64url");
  const inputs = Object.entries(fields)
    .map(([name, value]) => `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`)
    .join("");
  const body = `<main>
<h1>Returning to the app</h1>
<form method="post" action="${escapeHtml(action)}">${inputs}<button type="submit">Continue</button></form>
</main>
<script nonce="${nonce}">document.forms[0].submit();</script>`;
  return document(`Signing in with ${providerLabels[provider]}`, body, nonce);
}

export function sendHtml(reply: FastifyReply, status: number, html: string): FastifyReply {
  return reply
    .code(status)
    .header("cache-control", "no-store")
    .header("referrer-policy", "no-referrer")
    .header("x-frame-options", "DENY")
    .type("text/html; charset=utf-8")
    .send(html);
}
