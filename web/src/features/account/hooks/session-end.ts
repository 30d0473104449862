import { sessionStore } from "../../../lib/api-clients.ts";
import { deleteUser } from "../api/delete-user.ts";
import { logOut } from "../api/log-out.ts";

/**
 * Signs out: the service forgets the refresh token, and this browser forgets the session either
 * way (as the SDK does), so a failed call never leaves the user stuck signed in.
 */
export async function signOut(): Promise<void> {
  try {
    await logOut();
  } finally {
    sessionStore.signOut("signed-out");
  }
}

/**
 * Deletes the account. The service revokes every session of the user with it, so the local
 * session is simply dropped (no logout call: its refresh token no longer exists).
 */
export async function deleteAccount(): Promise<void> {
  await deleteUser();
  sessionStore.signOut("deleted");
}
