/** Every control operation, one file each (named after its operationId), listed explicitly. */
import addEmailJsFault from "./add-emailjs-fault.ts";
import addFault from "./add-fault.ts";
import advanceClock from "./advance-clock.ts";
import advanceEmailJsClock from "./advance-emailjs-clock.ts";
import applyConfig from "./apply-config.ts";
import clearEmailJsFaults from "./clear-emailjs-faults.ts";
import clearEmailJsRequests from "./clear-emailjs-requests.ts";
import clearFaults from "./clear-faults.ts";
import clearMail from "./clear-mail.ts";
import clearRequests from "./clear-requests.ts";
import confirmPendingUser from "./confirm-pending-user.ts";
import createApp from "./create-app.ts";
import createEmailJsAccount from "./create-emailjs-account.ts";
import createIdentityProviderAccount from "./create-identity-provider-account.ts";
import createUser from "./create-user.ts";
import deleteApp from "./delete-app.ts";
import deleteDocument from "./delete-document.ts";
import deleteEmailJsAccount from "./delete-emailjs-account.ts";
import deleteEmailJsFault from "./delete-emailjs-fault.ts";
import deleteFault from "./delete-fault.ts";
import deleteMail from "./delete-mail.ts";
import dropCollection from "./drop-collection.ts";
import exportState from "./export-state.ts";
import getApp from "./get-app.ts";
import getClock from "./get-clock.ts";
import getEmailJsAccount from "./get-emailjs-account.ts";
import getEmailJsClock from "./get-emailjs-clock.ts";
import getEmulatorConfig from "./get-emulator-config.ts";
import getHealth from "./get-health.ts";
import getMail from "./get-mail.ts";
import getMailSource from "./get-mail-source.ts";
import getMetrics from "./get-metrics.ts";
import getOpenApiDocument from "./get-open-api-document.ts";
import getReadiness from "./get-readiness.ts";
import getUser from "./get-user.ts";
import importState from "./import-state.ts";
import insertDocuments from "./insert-documents.ts";
import listApps from "./list-apps.ts";
import listAuthTokens from "./list-auth-tokens.ts";
import listCollections from "./list-collections.ts";
import listDocuments from "./list-documents.ts";
import listEmailJsAccounts from "./list-emailjs-accounts.ts";
import listEmailJsFaults from "./list-emailjs-faults.ts";
import listEmailJsRequests from "./list-emailjs-requests.ts";
import listFaults from "./list-faults.ts";
import listIdentityProviderAccounts from "./list-identity-provider-accounts.ts";
import listMail from "./list-mail.ts";
import listRequests from "./list-requests.ts";
import listUsers from "./list-users.ts";
import mintIdentityProviderToken from "./mint-identity-provider-token.ts";
import removeUser from "./remove-user.ts";
import replaceDocument from "./replace-document.ts";
import resetApp from "./reset-app.ts";
import resetClock from "./reset-clock.ts";
import resetEmailJsClock from "./reset-emailjs-clock.ts";
import resumeTrigger from "./resume-trigger.ts";
import revokeUserSessions from "./revoke-user-sessions.ts";
import streamEvents from "./stream-events.ts";
import updateUser from "./update-user.ts";

export const routes = [
  getHealth,
  getReadiness,
  getMetrics,
  getEmulatorConfig,
  getOpenApiDocument,
  streamEvents,
  exportState,
  importState,
  applyConfig,
  listApps,
  createApp,
  getApp,
  deleteApp,
  resetApp,
  resumeTrigger,
  listUsers,
  createUser,
  getUser,
  updateUser,
  removeUser,
  confirmPendingUser,
  revokeUserSessions,
  listAuthTokens,
  listIdentityProviderAccounts,
  createIdentityProviderAccount,
  mintIdentityProviderToken,
  getClock,
  advanceClock,
  resetClock,
  listFaults,
  addFault,
  deleteFault,
  clearFaults,
  listRequests,
  clearRequests,
  listCollections,
  listDocuments,
  insertDocuments,
  dropCollection,
  replaceDocument,
  deleteDocument,
  listMail,
  clearMail,
  getMail,
  deleteMail,
  getMailSource,
  listEmailJsAccounts,
  createEmailJsAccount,
  getEmailJsAccount,
  deleteEmailJsAccount,
  getEmailJsClock,
  advanceEmailJsClock,
  resetEmailJsClock,
  listEmailJsFaults,
  addEmailJsFault,
  deleteEmailJsFault,
  clearEmailJsFaults,
  listEmailJsRequests,
  clearEmailJsRequests,
];
