import { defineConfig } from "vitest/config";
import base, { heldTimeFiles } from "./vitest.config.ts";

/**
 * The emulator on its PostgreSQL store: the test files that read and write shared state — data
 * access, accounts, sessions, keys, mail, state, change streams — run again with TEST_STORE=postgres
 * (test/helpers/app.ts gives each emulator its own database on one throwaway cluster, started by the
 * globalSetup), and the PostgreSQL-only tests (test/postgres/): migrations, several instances,
 * durability, outages, production mode, the import command.
 */
export const bothStores = [
  "test/app-services/abuse-limits.test.ts",
  "test/app-services/session-refreshes.test.ts",
  "test/data/numeric-ids.test.ts",
  "test/app-services/address-prefixes.test.ts",
  "test/app-services/anonymous-users.test.ts",
  "test/app-services/api-keys.test.ts",
  "test/app-services/auth-triggers.test.ts",
  "test/app-services/database-triggers.test.ts",
  "test/app-services/trigger-suspension.test.ts",
  "test/app-services/fair-shares.test.ts",
  "test/app-services/functions.test.ts",
  "test/app-services/hostile-users.test.ts",
  "test/app-services/data-api.test.ts",
  "test/app-services/embedded-field-rules.test.ts",
  "test/app-services/https-endpoints.test.ts",
  "test/app-services/login.test.ts",
  "test/app-services/mail-limits.test.ts",
  "test/app-services/mongodb.test.ts",
  "test/app-services/oauth2-redirect.test.ts",
  "test/app-services/password-work.test.ts",
  "test/app-services/oauth2-tokens.test.ts",
  "test/app-services/quotas.test.ts",
  "test/app-services/rule-roles.test.ts",
  "test/app-services/scheduled-triggers.test.ts",
  "test/app-services/sessions.test.ts",
  "test/app-services/stream-caps.test.ts",
  "test/app-services/stream-revocation.test.ts",
  "test/app-services/userpass.test.ts",
  "test/app-services/watch.test.ts",
  "test/conformance/realm-web-queries.test.ts",
  "test/conformance/realm-web.test.ts",
  "test/conformance/realm-web-flows.test.ts",
  "test/functions/app-clock.test.ts",
  "test/functions/transactions.test.ts",
  "test/control/apps-and-users.test.ts",
  "test/control/user-listing.test.ts",
  "test/control/documents.test.ts",
  "test/control/mail.test.ts",
  "test/control/metrics.test.ts",
  "test/control/mail-edits.test.ts",
  "test/control/state.test.ts",
  "test/control/state-export-stall.test.ts",
  "test/control/state-import-checks.test.ts",
  "test/data/bounded-reads.test.ts",
  "test/data/collations.test.ts",
  "test/data/hostile-evaluation.test.ts",
  "test/data/long-values.test.ts",
  "test/data/nul-characters.test.ts",
  "test/data/lone-surrogates.test.ts",
  "test/data/prototype-paths.test.ts",
  "test/data/query-limits.test.ts",
  "test/data/regex-queries.test.ts",
  "test/data/upsert.test.ts",
  "test/data/write-stages.test.ts",
  "test/emailjs/send-email.test.ts",
  "test/fuzz/fuzz.test.ts",
];

// The base's settings, with these files instead of its own (mergeConfig would add the lists up).
export default defineConfig({
  test: {
    ...base.test,
    name: "mock-server (postgres)",
    include: [...bothStores, "test/postgres/**/*.test.ts"],
    // The attack suites run isolated on this store too (vitest.postgres-isolated.config.ts).
    exclude: heldTimeFiles,
    env: { TEST_STORE: "postgres" },
    globalSetup: ["test/postgres/global-setup.ts"],
  },
});
