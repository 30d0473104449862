/** Every App Services operation, one file each (named after its operationId), listed explicitly. */

import createApiKey from "./api-keys/create-api-key.ts";
import deleteApiKey from "./api-keys/delete-api-key.ts";
import disableApiKey from "./api-keys/disable-api-key.ts";
import enableApiKey from "./api-keys/enable-api-key.ts";
import getApiKey from "./api-keys/get-api-key.ts";
import listApiKeys from "./api-keys/list-api-keys.ts";
import beginOAuthLogin from "./auth/begin-oauth-login.ts";
import callResetPasswordFunction from "./auth/call-reset-password-function.ts";
import confirmUser from "./auth/confirm-user.ts";
import finishOAuthLogin from "./auth/finish-oauth-login.ts";
import finishOAuthLoginForm from "./auth/finish-oauth-login-form.ts";
import login from "./auth/login.ts";
import registerUser from "./auth/register-user.ts";
import resendConfirmationEmail from "./auth/resend-confirmation-email.ts";
import resetPassword from "./auth/reset-password.ts";
import retryCustomConfirmation from "./auth/retry-custom-confirmation.ts";
import sendResetPasswordEmail from "./auth/send-reset-password-email.ts";
import callDataApi from "./endpoints/call-data-api.ts";
import callEndpointDelete from "./endpoints/call-endpoint-delete.ts";
import callEndpointGet from "./endpoints/call-endpoint-get.ts";
import callEndpointPatch from "./endpoints/call-endpoint-patch.ts";
import callEndpointPost from "./endpoints/call-endpoint-post.ts";
import callEndpointPut from "./endpoints/call-endpoint-put.ts";
import callFunction from "./functions/call-function.ts";
import callFunctionStreaming from "./functions/call-function-streaming.ts";
import getLocation from "./location/get-location.ts";
import deleteUser from "./sessions/delete-user.ts";
import getProfile from "./sessions/get-profile.ts";
import logOut from "./sessions/log-out.ts";
import refreshAccessToken from "./sessions/refresh-access-token.ts";

export const routes = [
  getLocation,
  login,
  beginOAuthLogin,
  finishOAuthLogin,
  finishOAuthLoginForm,
  registerUser,
  confirmUser,
  resendConfirmationEmail,
  retryCustomConfirmation,
  resetPassword,
  sendResetPasswordEmail,
  callResetPasswordFunction,
  callFunction,
  callFunctionStreaming,
  getProfile,
  refreshAccessToken,
  logOut,
  deleteUser,
  createApiKey,
  listApiKeys,
  getApiKey,
  deleteApiKey,
  enableApiKey,
  disableApiKey,
];

/**
 * The app's HTTPS endpoints, one operation a method: registered in a scope of their own, where a
 * body of any type is read as its bytes (the function gets them; a signature is checked on them).
 */
export const endpointRoutes = [
  callDataApi,
  callEndpointGet,
  callEndpointPost,
  callEndpointPut,
  callEndpointPatch,
  callEndpointDelete,
];
