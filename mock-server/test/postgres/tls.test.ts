/**
 * The database over TLS (docs/decisions/0058-database-tls.md): a server with a certificate of its
 * own authority, reached with `sslmode=verify-full` (or `require`, read the same) and the
 * authority in `sslrootcert`, every connection encrypted; refused without the authority, with what
 * to do; libpq's meanings only when the URL asks for them; no node-postgres warning at start.
 */
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { localCertificate } from "../../../scripts/local-certificate.mjs";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import { ensureBuilt, killAll, startEmulatorProcess } from "../helpers/emulator-process.ts";
import { expectFetchContract } from "../helpers/fetch-contract.ts";
import { listening } from "../helpers/listen.ts";
import { adminQuery, canConnect, type PostgresCluster, postgresAdminUrl, startCluster } from "../helpers/postgres.ts";
import { until } from "../helpers/until.ts";

const secret = "tls-test-signing-secret-0123456789";
let cluster: PostgresCluster;
let scratch: string;
/** The file holding the certificate's authority (the self-signed certificate itself). */
let authority: string;

beforeAll(async () => {
  await ensureBuilt();
  const certificate = await localCertificate();
  // A private server with TLS (the shared one serves the other files without), also on 127.0.0.2:
  // an address the certificate does not name.
  cluster = await startCluster({
    tls: certificate,
    settings: { listen_addresses: "127.0.0.1,127.0.0.2" },
  });
  appendFileSync(join(cluster.dataDir, "pg_hba.conf"), "host all all 127.0.0.2/32 trust\n");
  await adminQuery(cluster.url, "SELECT pg_reload_conf()");
  await until(() => canConnect(`${byOtherName()}?sslmode=disable`), "connections from 127.0.0.2 to be let in");
  scratch = mkdtempSync(join(tmpdir(), "emulator-tls-"));
  authority = join(scratch, "authority.crt");
  writeFileSync(authority, certificate.cert);
}, 60_000);

afterAll(async () => {
  killAll();
  await cluster?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

/** The cluster's URL by an address the certificate does not name. */
const byOtherName = () => cluster.url.replace("127.0.0.1", "127.0.0.2");

/** The cluster's URL (127.0.0.1, which the certificate names) with these parameters. */
const withTls = (query: string) => `${cluster.url}?${query}`;

/** Whether every connection of the emulator's is encrypted, and how many there are. */
async function emulatorConnections(): Promise<{ connections: number; encrypted: number }> {
  const { rows } = await adminQuery(
    cluster.url,
    `SELECT count(*)::int AS connections, count(*) FILTER (WHERE s.ssl)::int AS encrypted
       FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid)
      WHERE a.application_name LIKE 'app-services-emulator%'`,
  );
  return rows[0] as { connections: number; encrypted: number };
}

const reachRefusal = (url: string) =>
  PostgresStore.open({ url }).then(
    async (store) => {
      await store.close();
      return "opened";
    },
    (error: Error) => error.message,
  );

describe("the database over TLS", () => {
  let app: FastifyInstance | undefined;
  afterAll(() => app?.close());

  it("serves with sslmode=verify-full and the authority in sslrootcert, every connection encrypted", async () => {
    let url: string;
    ({ app, url } = await listening({
      databaseUrl: withTls(`sslmode=verify-full&sslrootcert=${encodeURIComponent(authority)}`),
      signingSecret: secret,
    }));
    const response = await fetch(`${url}/api/client/v2.0/app/local-app/auth/providers/anon-user/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    await expectFetchContract("login", response);
    const { connections, encrypted } = await emulatorConnections();
    // (The pool's and the notifications' listener.)
    expect(connections).toBeGreaterThanOrEqual(2);
    expect(encrypted).toBe(connections);
  });

  it("reads sslmode=require as verify-full: refused without the authority, saying what to do", async () => {
    expect(await reachRefusal(withTls("sslmode=require"))).toBe(
      `Cannot reach the database at 127.0.0.1:${cluster.port}/postgres: self-signed certificate (the database's ` +
        "certificate is not one this server trusts: name the authority that signed it with sslrootcert=<file> in the URL)",
    );
    expect(await reachRefusal(withTls("sslmode=verify-ca"))).toMatch(/self-signed certificate \(the database's/);
    // libpq's sslrootcert=system: the public authorities, which did not sign it (not a file named "system").
    expect(await reachRefusal(withTls("sslrootcert=system"))).toMatch(/self-signed certificate \(the database's/);
    expect(await reachRefusal(withTls(`sslmode=require&sslrootcert=${encodeURIComponent(authority)}`))).toBe("opened");
    // A name the certificate does not hold.
    const byOtherName = cluster.url.replace("127.0.0.1", "127.0.0.2");
    expect(await reachRefusal(`${byOtherName}?sslmode=require&sslrootcert=${encodeURIComponent(authority)}`)).toMatch(
      /IP: 127\.0\.0\.2 is not in the cert's list.* \(connect by a name the database's certificate holds/,
    );
  });

  it("gives libpq's meanings when the URL asks (uselibpqcompat=true): require encrypts without checking", async () => {
    expect(await reachRefusal(withTls("uselibpqcompat=true&sslmode=require"))).toBe("opened");
  });

  it("refuses sslmode=require to a server without TLS", async () => {
    expect(await reachRefusal(`${postgresAdminUrl()}?sslmode=require`)).toMatch(
      /^Cannot reach the database at .*: The server does not support SSL connections$/,
    );
  });

  it("starts with sslmode=require without node-postgres's warning about its coming change", async () => {
    const { rows } = await adminQuery(cluster.url, "SELECT 1 FROM pg_database WHERE datname = 'tls_cli'");
    if (rows.length === 0) await adminQuery(cluster.url, "CREATE DATABASE tls_cli");
    const emulator = await startEmulatorProcess(
      [
        "--database",
        `${cluster.url.replace(/\/postgres$/, "/tls_cli")}?sslmode=require&sslrootcert=${encodeURIComponent(authority)}`,
      ],
      { MOCK_SIGNING_SECRET: secret },
    );
    try {
      expect((await fetch(`${emulator.url}/_mock/v1/ready`)).status).toBe(200);
    } finally {
      await emulator.stop();
    }
    expect(emulator.stderr()).not.toContain("SECURITY WARNING");
    expect(emulator.stderr()).not.toContain("sslmode");
  });
});
