import { callFunction } from "../../../lib/api/call-function.ts";
import { sessionMiddleware } from "../../../lib/api-clients.ts";

/**
 * Custom user data lives in `notes-app.profiles` (one document per user, keyed by `user_id`) and
 * reaches the app inside the access token, so after writing it the token is refreshed — as the
 * SDK's `refreshCustomData()` does. Strings and booleans are already canonical Extended JSON.
 */
export async function saveDisplayName(userId: string, displayName: string): Promise<void> {
  await callFunction({
    name: "updateOne",
    service: "mongodb-atlas",
    arguments: [
      {
        database: "notes-app",
        collection: "profiles",
        query: { user_id: userId },
        update: { $set: { user_id: userId, display_name: displayName } },
        upsert: true,
      },
    ],
  });
  await sessionMiddleware.refresh();
}
