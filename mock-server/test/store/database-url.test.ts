/**
 * `--database` is checked at start as node-postgres will read it: every form its connection strings
 * take (a Unix socket's folder in `host=` or percent-encoded as the host) is accepted, anything
 * else is refused with what is wrong.
 */
import { describe, expect, it } from "vitest";
import { checkDatabaseUrl } from "../../src/store/open-store.ts";
import { connectionUrl } from "../../src/store/postgres/connection-url.ts";
import { describeUrl } from "../../src/store/postgres/database.ts";

describe("checkDatabaseUrl", () => {
  it("accepts host and port, IPv6 hosts, and Unix sockets in every form node-postgres reads", () => {
    for (const url of [
      "postgres://user:secret@db.example:5432/app",
      "postgresql://user@[::1]:5432/app?sslmode=require",
      "postgresql:///app?host=/var/run/postgresql",
      "postgres://user:secret@/app?host=/var/run/postgresql",
      "postgresql://user@%2Fvar%2Frun%2Fpostgresql/app",
    ]) {
      expect(checkDatabaseUrl(url), url).toBeNull();
    }
  });

  it("refuses what is not a PostgreSQL URL, or names no host, saying why", () => {
    expect(checkDatabaseUrl("db.example/app")).toBe("not a URL (postgres://user:password@host:port/database)");
    expect(checkDatabaseUrl("mysql://user@db.example/app")).toBe(
      "'mysql://…' is not a PostgreSQL URL: use postgres://user:password@host:port/database",
    );
    expect(checkDatabaseUrl("postgres:///app")).toBe("the URL names no host");
    expect(checkDatabaseUrl("postgres://user@db.example:99999/app")).toMatch(/^the URL cannot be read: /);
  });
});

describe("describeUrl", () => {
  it("names the host (a socket's folder), port and database, never the credentials", () => {
    expect(describeUrl("postgres://app:secret@db.example:5432/notes")).toBe("db.example:5432/notes");
    expect(describeUrl("postgres://app:secret@/notes?host=/var/run/postgresql")).toBe("/var/run/postgresql/notes");
  });
});

describe("connectionUrl", () => {
  it("pins sslmode prefer, require and verify-ca to verify-full, unless the URL asks for libpq's meanings", () => {
    const base = "postgres://app:secret@db.example:5432/notes";
    for (const mode of ["prefer", "require", "verify-ca"]) {
      expect(connectionUrl(`${base}?sslmode=${mode}`)).toBe(`${base}?sslmode=verify-full`);
      expect(connectionUrl(`${base}?application_name=x&sslmode=${mode}&sslrootcert=%2Fca.crt`)).toBe(
        `${base}?application_name=x&sslmode=verify-full&sslrootcert=%2Fca.crt`,
      );
      expect(connectionUrl(`${base}?uselibpqcompat=true&sslmode=${mode}`)).toBe(
        `${base}?uselibpqcompat=true&sslmode=${mode}`,
      );
    }
    // libpq's `sslrootcert=system`: the trusted public authorities, checked as verify-full whatever the mode.
    expect(connectionUrl(`${base}?sslrootcert=system`)).toBe(`${base}?sslmode=verify-full`);
    expect(connectionUrl(`${base}?sslmode=require&sslrootcert=system&application_name=x`)).toBe(
      `${base}?application_name=x&sslmode=verify-full`,
    );
    expect(connectionUrl(`${base}?uselibpqcompat=true&sslmode=require&sslrootcert=system`)).toBe(
      `${base}?uselibpqcompat=true&sslmode=verify-full`,
    );
    for (const url of [
      base,
      `${base}?sslmode=disable`,
      `${base}?sslmode=verify-full`,
      `${base}?sslmode=no-verify`,
      `${base}?sslmode=requirex`,
      `${base}?xsslmode=require`,
    ])
      expect(connectionUrl(url)).toBe(url);
  });
});
