/** The authorization request's parameters among a form's fields (the picker repeats them as hidden fields). */
import { type AuthorizationParams, authorizationParamNames } from "./tenant.ts";

export function authorizationParams(fields: Record<string, unknown>): AuthorizationParams {
  const params: AuthorizationParams = {};
  for (const name of authorizationParamNames) {
    const value = fields[name];
    if (typeof value === "string") params[name] = value;
  }
  return params;
}
