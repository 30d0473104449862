/**
 * The registrations an instance keeps from its logins (store/postgres/kept-accounts.ts): by app
 * and address, bounded, the one whose last login is oldest going first.
 */
import { describe, expect, it } from "vitest";
import { KeptAccounts, maxKeptAccounts } from "../../src/store/postgres/kept-accounts.ts";
import type { StoredUserpassAccount } from "../../src/store/store.ts";

const account = (n: number): StoredUserpassAccount => ({
  id: `account-${n}`,
  email: `user-${n}@example.com`,
  passwordHash: `hash-${n}`,
  confirmed: true,
  userId: `user-${n}`,
  createdAt: 0,
});

describe("KeptAccounts", () => {
  it("keeps by app and address, and forgets", () => {
    const kept = new KeptAccounts();
    kept.keep("app-a", "user-1@example.com", account(1));
    expect(kept.get("app-a", "user-1@example.com")).toEqual(account(1));
    expect(kept.get("app-b", "user-1@example.com")).toBeUndefined();
    kept.keep("app-a", "user-1@example.com", account(2));
    expect(kept.get("app-a", "user-1@example.com")?.id).toBe("account-2");
    kept.forget("app-a", "user-1@example.com");
    expect(kept.get("app-a", "user-1@example.com")).toBeUndefined();
  });

  it("holds at most its limit, the address whose last login is oldest going first", () => {
    const kept = new KeptAccounts();
    for (let n = 0; n < maxKeptAccounts; n++) kept.keep("app", `user-${n}`, account(n));
    // The first logs in again: it is the newest now, and the second is the oldest.
    kept.keep("app", "user-0", account(0));
    kept.keep("app", "user-new", account(maxKeptAccounts));
    expect(kept.size).toBe(maxKeptAccounts);
    expect(kept.get("app", "user-0")).toBeDefined();
    expect(kept.get("app", "user-1")).toBeUndefined();
    expect(kept.get("app", "user-new")).toBeDefined();
  });
});
