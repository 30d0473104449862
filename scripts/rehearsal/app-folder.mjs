// The app the rehearsal deploys: the repository's notes app (mock-server/apps/local-app) exported as
// a user brings theirs over — its own app_id, production settings, the site's origin allowed, and
// the e-mail/password provider's links pointing at the site's pages (web/README.md, "Production"), and
// Google, Apple and Facebook ending their sign-ins there (docs/production.md).
import { generateKeyPairSync } from "node:crypto";
import { cpSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const template = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "mock-server", "apps", "local-app");

export const rehearsalAppId = "notes-rehearsal";

/** The Apple developer team and key the rehearsal's Sign in with Apple client secret is signed as. */
export const appleTeam = { teamId: "REHEARSAL1", keyId: "REHEARSALK" };

/**
 * The authentication providers of the rehearsed app (auth/providers.json): the template's, with the
 * changes for the site. Google, Apple and Facebook end their sign-ins at the site's redirect page;
 * Apple's client secret is the team's `.p8` key (secrets.json), from which the server signs its
 * client-secret JWTs.
 * @param {string} site the site's origin, e.g. https://localhost:8443
 * @param {Record<string, any>} providers the template's providers.json
 */
export function siteProviders(site, providers) {
  const redirect = (/** @type {string} */ name) => ({ ...providers[name], redirect_uris: [`${site}/auth/callback`] });
  return {
    ...providers,
    "oauth2-google": redirect("oauth2-google"),
    "oauth2-facebook": redirect("oauth2-facebook"),
    "oauth2-apple": {
      ...redirect("oauth2-apple"),
      config: { ...providers["oauth2-apple"].config, ...appleTeam },
    },
    "local-userpass": {
      ...providers["local-userpass"],
      config: {
        ...providers["local-userpass"].config,
        autoConfirm: false,
        emailConfirmationUrl: `${site}/confirm`,
        resetPasswordUrl: `${site}/reset-password`,
      },
    },
  };
}

/**
 * Writes the app folder into `dir` (which must not exist yet).
 * @param {{ dir: string, site: string }} options
 * @returns {{ dir: string, appId: string }}
 */
export function exportAppFolder({ dir, site }) {
  cpSync(template, dir, { recursive: true });
  const edit = (/** @type {string} */ file, /** @type {(json: any) => any} */ change) => {
    const path = join(dir, file);
    writeFileSync(path, `${JSON.stringify(change(JSON.parse(readFileSync(path, "utf8"))), null, 2)}\n`);
  };
  edit("realm_config.json", (config) => ({
    ...config,
    app_id: rehearsalAppId,
    environment: "production",
    allowed_request_origins: [site],
  }));
  edit("auth/providers.json", (providers) => siteProviders(site, providers));
  // A key made for the run, as Apple's developer portal hands one out (PKCS #8, P-256).
  const appleKey = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({
    type: "pkcs8",
    format: "pem",
  });
  edit("secrets.json", (secrets) => ({ ...secrets, appleClientSecret: appleKey }));
  return { dir, appId: rehearsalAppId };
}
