import { defineConfig } from "vitest/config";

/**
 * Two projects: every test on the in-memory store (the harness default), and the tests that read
 * and write shared state — data access, accounts, sessions, keys, mail, state, change streams — on
 * PostgreSQL too (TEST_STORE=postgres: test/helpers/app.ts gives each emulator its own database on
 * one throw-away cluster), with the PostgreSQL-only tests (test/postgres/).
 */
const bothStores = [
  "test/app-services/api-keys.test.ts",
  "test/app-services/functions.test.ts",
  "test/app-services/login.test.ts",
  "test/app-services/mongodb.test.ts",
  "test/app-services/sessions.test.ts",
  "test/app-services/userpass.test.ts",
  "test/app-services/watch.test.ts",
  "test/conformance/realm-web-queries.test.ts",
  "test/conformance/realm-web.test.ts",
  "test/control/apps-and-users.test.ts",
  "test/control/mail.test.ts",
  "test/control/state.test.ts",
  "test/data/query-limits.test.ts",
  "test/data/regex-queries.test.ts",
  "test/data/upsert.test.ts",
  "test/emailjs/send-email.test.ts",
];

export default defineConfig({
  test: {
    testTimeout: 20_000,
    hookTimeout: 20_000,
    projects: [
      {
        extends: true,
        test: { name: "memory", include: ["test/**/*.test.ts"], exclude: ["test/postgres/**"] },
      },
      {
        extends: true,
        test: {
          name: "postgres",
          include: [...bothStores, "test/postgres/**/*.test.ts"],
          env: { TEST_STORE: "postgres" },
          globalSetup: ["test/postgres/global-setup.ts"],
        },
      },
    ],
  },
});
