/**
 * App Services' authentication triggers (`AppConfig.triggers`, an export's `triggers/*.json` of
 * type `AUTHENTICATION`): when a user is created, logs in or is deleted through one of a trigger's
 * providers, its function runs as system with the authentication event
 * `{operationType, providers, user, time}` — after the request's own work is done and off its
 * path, as the service runs triggers: a trigger that fails or is slow changes nothing for the
 * request, and its failure is logged. The instance that served the request runs it, so it runs
 * once however many instances share the database.
 */
import type { FastifyBaseLogger } from "fastify";
import type { AppConfig } from "../config/app-config.ts";
import type { ControlSchemas } from "../openapi/types.ts";
import type { StoredUser } from "../store/store.ts";

export type AuthOperation = "CREATE" | "LOGIN" | "DELETE";

type Trigger = ControlSchemas["AuthenticationTrigger"];

/** What runs a trigger's function (the app's functions, as system). */
export interface TriggerApp {
  readonly appId: string;
  readonly config: AppConfig;
  readonly clock: { now(): number };
  runTriggerFunction(name: string, args: unknown[]): Promise<unknown>;
}

/** The providers of a user's identities, each once (a deleted user's event names them all). */
export const providersOf = (user: StoredUser) => [
  ...new Set(user.identities.map((identity) => identity.provider_type)),
];

/** The user as a trigger's function gets it (the service's user object, without custom data). */
function userObject(user: StoredUser) {
  return {
    id: user.id,
    type: user.type,
    data: user.data,
    identities: user.identities.map((identity) => ({ id: identity.id, provider_type: identity.provider_type })),
  };
}

/**
 * Runs the app's authentication triggers for an event, without waiting for them: each trigger
 * whose operation type is this one and whose providers include one of `providers`. Answers the
 * runs, for tests and the shutdown to wait on; they never reject.
 */
export function fireAuthTriggers(
  app: TriggerApp,
  operationType: AuthOperation,
  user: StoredUser,
  providers: string[],
  log: FastifyBaseLogger,
): Promise<void>[] {
  const triggers = (app.config.triggers ?? []).filter(
    (trigger): trigger is Trigger =>
      trigger.type === "AUTHENTICATION" &&
      trigger.disabled !== true &&
      trigger.operationType === operationType &&
      trigger.providers.some((provider) => providers.includes(provider)),
  );
  if (triggers.length === 0) return [];
  const event = { operationType, providers, user: userObject(user), time: new Date(app.clock.now()) };
  return triggers.map((trigger) =>
    app.runTriggerFunction(trigger.functionName, [event]).then(
      () => undefined,
      (error: unknown) => {
        log.warn(
          { appId: app.appId, trigger: trigger.name, reason: (error as Error).message },
          "authentication trigger failed",
        );
      },
    ),
  );
}
