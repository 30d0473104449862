/**
 * Between registering an address and its confirmation, the app remembers:
 * - the e-mail address, in localStorage (not secret), so the confirmation page opened from the
 *   e-mail — in another tab or after a reload — knows which address it just confirmed;
 * - the password, in this tab's memory only, so this tab can sign in (or link) by itself as soon as
 *   the address is confirmed, without asking for it again. It is never written anywhere.
 */
import { appId } from "./api-clients.ts";

export type PendingPurpose = "sign-up" | "upgrade";

interface Credentials {
  email: string;
  password: string;
  purpose: PendingPurpose;
}

let inMemory: Credentials | null = null;

const keyOf = (purpose: PendingPurpose) => `notes:app(${appId}):pending-${purpose}`;

export const pendingCredentials = {
  remember(credentials: Credentials): void {
    inMemory = credentials;
    try {
      localStorage.setItem(keyOf(credentials.purpose), credentials.email);
    } catch {
      // storage disabled: the in-memory copy still serves this tab
    }
  },
  /** The credentials typed in this tab, if any. */
  credentials(purpose: PendingPurpose): Credentials | null {
    return inMemory?.purpose === purpose ? inMemory : null;
  },
  /** The address registered last in this browser for the purpose, if still pending. */
  email(purpose: PendingPurpose): string | null {
    if (inMemory?.purpose === purpose) return inMemory.email;
    try {
      return localStorage.getItem(keyOf(purpose));
    } catch {
      return null;
    }
  },
  forget(purpose: PendingPurpose): void {
    if (inMemory?.purpose === purpose) inMemory = null;
    try {
      localStorage.removeItem(keyOf(purpose));
    } catch {
      // nothing stored
    }
  },
};
