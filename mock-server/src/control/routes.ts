/** Every control operation, one file each (named after its operationId), listed explicitly. */
import advanceClock from "./advance-clock.ts";
import applyConfig from "./apply-config.ts";
import confirmPendingUser from "./confirm-pending-user.ts";
import createApp from "./create-app.ts";
import createUser from "./create-user.ts";
import deleteApp from "./delete-app.ts";
import dropCollection from "./drop-collection.ts";
import getApp from "./get-app.ts";
import getClock from "./get-clock.ts";
import getEmulatorConfig from "./get-emulator-config.ts";
import getHealth from "./get-health.ts";
import getOpenApiDocument from "./get-open-api-document.ts";
import getUser from "./get-user.ts";
import insertDocuments from "./insert-documents.ts";
import listApps from "./list-apps.ts";
import listAuthTokens from "./list-auth-tokens.ts";
import listCollections from "./list-collections.ts";
import listDocuments from "./list-documents.ts";
import listUsers from "./list-users.ts";
import removeUser from "./remove-user.ts";
import resetApp from "./reset-app.ts";
import revokeUserSessions from "./revoke-user-sessions.ts";
import updateUser from "./update-user.ts";

export const routes = [
  getHealth,
  getEmulatorConfig,
  getOpenApiDocument,
  applyConfig,
  listApps,
  createApp,
  getApp,
  deleteApp,
  resetApp,
  listUsers,
  createUser,
  getUser,
  updateUser,
  removeUser,
  confirmPendingUser,
  revokeUserSessions,
  listAuthTokens,
  getClock,
  advanceClock,
  listCollections,
  listDocuments,
  insertDocuments,
  dropCollection,
];
