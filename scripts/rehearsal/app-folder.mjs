// The app the rehearsal deploys: the repository's notes app (mock-server/apps/local-app) exported as
// a user brings theirs over — its own app_id, production settings, the site's origin allowed, and
// the e-mail/password provider's links pointing at the site's pages (web/README.md, "Production").
import { cpSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const template = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "mock-server", "apps", "local-app");

export const rehearsalAppId = "notes-rehearsal";

/**
 * The authentication providers of the rehearsed app (auth/providers.json): the template's, with the
 * changes for the site. More providers (an OpenID Connect provider the rehearsal runs, say) are
 * entries here.
 * @param {string} site the site's origin, e.g. https://localhost:8443
 * @param {Record<string, any>} providers the template's providers.json
 */
export function siteProviders(site, providers) {
  return {
    ...providers,
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
  return { dir, appId: rehearsalAppId };
}
