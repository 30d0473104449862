/**
 * App Services' authentication triggers (`AppConfig.triggers`, an export's `triggers/*.json` of
 * type `AUTHENTICATION`): when a user is created, logs in or is deleted through one of a trigger's
 * providers, its function runs as system with the authentication event
 * `{operationType, providers, user, time}` — after the request's own work is done and off its
 * path, as the service runs triggers: a trigger that fails or is slow changes nothing for the
 * request, and its failure is logged. The instance that served the request runs it, so it runs
 * once however many instances share the database. Where the store keeps trigger events
 * (PostgreSQL), each trigger's event is kept as it fires and removed once run: an instance that
 * dies leaves it to another (decision 0031).
 */
import type { FastifyBaseLogger } from "fastify";
import type { AppConfig } from "../config/app-config.ts";
import type { ControlSchemas } from "../openapi/types.ts";
import type { StoredUser, TriggerEventStore } from "../store/store.ts";

export type AuthOperation = "CREATE" | "LOGIN" | "DELETE";

type Trigger = ControlSchemas["AuthenticationTrigger"];

/** What runs a trigger's function (the app's functions, as system). */
export interface TriggerApp {
  readonly appId: string;
  readonly config: AppConfig;
  readonly clock: { readonly offsetMs: number; now(): number };
  runTriggerFunction(name: string, args: unknown[]): Promise<unknown>;
  /** Where its authentication trigger events are kept while they run, if the store keeps them. */
  readonly keptAuthEvents?: KeptAuthEvents | null;
}

/**
 * The store that keeps authentication trigger events while they run, the kept events this
 * instance holds (their leases are renewed), and whether the server stops (then a run cut short
 * stays kept for another instance).
 */
export class KeptAuthEvents {
  readonly held = new Set<string>();
  stopped = false;
  constructor(readonly store: TriggerEventStore) {}
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
  return triggers.map((trigger) => runAuthTrigger(app, trigger, event, log));
}

/**
 * Runs one authentication trigger for an event; never rejects. Where the store keeps trigger
 * events, the event is kept first and removed once run (`id`: one kept already, claimed from an
 * instance that stopped).
 */
export async function runAuthTrigger(
  app: TriggerApp,
  trigger: Trigger,
  event: Record<string, unknown>,
  log: FastifyBaseLogger | undefined,
  id?: string,
): Promise<void> {
  const kept = app.keptAuthEvents ?? null;
  let keptId = id;
  if (kept && keptId === undefined) {
    try {
      keptId = await kept.store.keepAuth(app.appId, trigger.name, event);
    } catch (error) {
      log?.warn(
        { appId: app.appId, trigger: trigger.name, reason: (error as Error).message },
        "authentication trigger event could not be kept: it runs on this instance only",
      );
    }
  }
  // (The server stops meanwhile: the kept event is another instance's to run.)
  if (kept?.stopped && keptId !== undefined) return;
  if (keptId !== undefined) kept?.held.add(keptId);
  try {
    await app.runTriggerFunction(trigger.functionName, [event]);
  } catch (error) {
    log?.warn(
      { appId: app.appId, trigger: trigger.name, reason: (error as Error).message },
      "authentication trigger failed",
    );
  }
  if (!kept || keptId === undefined) return;
  kept.held.delete(keptId);
  if (kept.stopped) return;
  await kept.store
    .done([keptId])
    .catch((error: unknown) =>
      log?.warn(
        { appId: app.appId, trigger: trigger.name, reason: (error as Error).message },
        "authentication trigger event could not be marked run: it may run again",
      ),
    );
}
