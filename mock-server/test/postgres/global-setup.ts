/**
 * Vitest globalSetup: one throw-away PostgreSQL cluster per test run, shared by every test file through
 * `inject("postgresUrl")` (its admin URL; test files create their own databases with createTestDatabase()).
 * With TEST_DATABASE_URL set, that server is used instead and nothing is started. The emulator's schema
 * is migrated once into a template database, so each test's database is a copy (no migration per test).
 */
import pg from "pg";
import type { TestProject } from "vitest/node";
import { type PostgresCluster, startCluster } from "../../../scripts/postgres-cluster.mjs";
import { migrate } from "../../src/store/postgres/migrations.ts";
import { databaseUrl, templateDatabase } from "../helpers/postgres.ts";

declare module "vitest" {
  export interface ProvidedContext {
    /** Admin URL of the test run's PostgreSQL server (superuser, database `postgres`). */
    postgresUrl: string;
  }
}

/** A migrated template database on the server (made again from scratch on every run). */
async function prepareTemplate(adminUrl: string): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${templateDatabase} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${templateDatabase}`);
  } finally {
    await admin.end();
  }
  const template = new pg.Client({ connectionString: databaseUrl(adminUrl, templateDatabase) });
  await template.connect();
  try {
    await migrate(template);
  } finally {
    await template.end();
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const external = process.env.TEST_DATABASE_URL;
  if (external) {
    await prepareTemplate(external);
    project.provide("postgresUrl", external);
    return async () => {};
  }
  const started = Date.now();
  // A throw-away server: nothing on it must outlive a crash of the machine, so it lives in memory
  // when there is room and skips flushing (the emulator's own guarantees are tested by killing the
  // emulator, not the server). Each test's database is about a thousand new files: on a disk that
  // was a fifth of the unit tests' CPU.
  const cluster: PostgresCluster = await startCluster({
    inMemory: true,
    settings: { fsync: "off", full_page_writes: "off" },
  });
  if (process.env.PG_CLUSTER_VERBOSE) {
    process.stderr.write(`PostgreSQL ${cluster.binaries.version} on ${cluster.url} (${Date.now() - started} ms)\n`);
  }
  await prepareTemplate(cluster.url);
  project.provide("postgresUrl", cluster.url);
  return async () => {
    await cluster.stop();
  };
}
