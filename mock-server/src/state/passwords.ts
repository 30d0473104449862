/**
 * Salted password hashes with scrypt (node:crypto, off the event loop). The cost is log2(N):
 * the default 10 (N = 1024, r = 8, p = 1; about 2 ms a hash) keeps logins above 400/s per core
 * while never storing a password in a form that is cheap to reverse. `--password-hash-cost`
 * raises it. The format records its parameters, so hashes made at another cost still verify.
 */
import { randomBytes, scrypt, timingSafeEqual } from "node:crypto";

export const defaultPasswordHashCost = 10;
const keyLength = 32;

function scryptAsync(password: string, salt: Buffer, cost: number): Promise<Buffer> {
  const N = 2 ** cost;
  return new Promise((resolve, reject) => {
    scrypt(password, salt, keyLength, { N, r: 8, p: 1, maxmem: 256 * N * 8 + 1024 * 1024 }, (error, key) =>
      error ? reject(error) : resolve(key),
    );
  });
}

export async function hashPassword(password: string, cost: number): Promise<string> {
  const salt = randomBytes(16);
  const key = await scryptAsync(password, salt, cost);
  return `scrypt$${cost}$${salt.toString("base64")}$${key.toString("base64")}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, costText, saltText, keyText] = stored.split("$");
  if (scheme !== "scrypt" || !costText || !saltText || !keyText) return false;
  const cost = Number(costText);
  if (!Number.isInteger(cost) || cost < 1 || cost > 20) return false;
  const expected = Buffer.from(keyText, "base64");
  const actual = await scryptAsync(password, Buffer.from(saltText, "base64"), cost);
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}

/** Hashes of a password nobody knows, one per cost: what a login checks when there is no account. */
const standIns = new Map<number, Promise<string>>();

/**
 * A hash to check a password against when the address has no registration (or a pending one), so
 * that a wrong password costs the same work whether or not the address is known: the time of the
 * reply does not tell which addresses have accounts. Made once per cost, on first use.
 */
export function standInHash(cost: number): Promise<string> {
  let hash = standIns.get(cost);
  if (!hash) {
    hash = hashPassword(randomBytes(32).toString("base64"), cost);
    standIns.set(cost, hash);
  }
  return hash;
}
