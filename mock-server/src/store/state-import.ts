/**
 * What both stores check before they replace everything with an imported state (the caller has
 * validated it against the control document's State schema already).
 */
import { type Document, fromEJSON, idRefusal } from "../data/documents.ts";
import type { AppRecord, AppState, State, TriggerSuspension, Writer } from "./store.ts";

export class StateImportError extends Error {}

/** The apps of a state, checked for duplicate ids, with their records and suspended triggers. */
export function stateApps(state: State): { saved: AppState; record: AppRecord; suspensions: TriggerSuspension[] }[] {
  const ids = new Set<string>();
  const apps = state.apps.map((saved) => {
    if (ids.has(saved.appId)) throw new StateImportError(`the app id '${saved.appId}' appears twice`);
    ids.add(saved.appId);
    const record: AppRecord = {
      appId: saved.appId,
      domainId: saved.domainId,
      createdAt: Date.parse(saved.createdAt),
      appDir: saved.appDir ?? null,
      config: structuredClone(saved.config),
    };
    return { saved, record, suspensions: suspensionsOf(saved) };
  });
  const publicKeys = new Set<string>();
  for (const account of state.emailjsAccounts) {
    if (publicKeys.has(account.publicKey))
      throw new StateImportError(`the public key '${account.publicKey}' appears twice`);
    publicKeys.add(account.publicKey);
  }
  return apps;
}

/**
 * An app's suspended triggers (decision 0057): each must name a database trigger of one collection
 * in the app's settings (only those are suspended), once.
 */
function suspensionsOf(saved: AppState): TriggerSuspension[] {
  const suspendable = new Set(
    (saved.config.triggers ?? []).flatMap((t) => (t.type === "DATABASE" && t.collection !== undefined ? [t.name] : [])),
  );
  const named = new Set<string>();
  return (saved.suspendedTriggers ?? []).map(({ name, since, reason }) => {
    if (!suspendable.has(name))
      throw new StateImportError(
        `the app '${saved.appId}' holds a suspension of '${name}', which is not a database trigger of one collection`,
      );
    if (named.has(name)) throw new StateImportError(`the app '${saved.appId}' holds a suspension of '${name}' twice`);
    named.add(name);
    return { name, since: Date.parse(since), reason };
  });
}

/** Suspended triggers as the control API shows them (`since` a date-time). */
export const suspensionViews = (suspensions: TriggerSuspension[]): NonNullable<AppState["suspendedTriggers"]> =>
  suspensions.map(({ name, since, reason }) => ({ name, since: new Date(since).toISOString(), reason }));

/** An app's suspended triggers as a state holds them (absent when there are none). */
export const savedSuspensions = (suspensions: TriggerSuspension[]): Pick<AppState, "suspendedTriggers"> =>
  suspensions.length === 0 ? {} : { suspendedTriggers: suspensionViews(suspensions) };

/**
 * Whom each document of an imported collection counts for, by its place in `documents` (a
 * collection's `owners`, docs/decisions/0018-fair-shares.md); a place named twice or out of range
 * refuses the import.
 */
export function ownersByPlace(
  owners: AppState["collections"][number]["owners"],
  count: number,
  namespace: string,
): (Writer | undefined)[] {
  const byPlace: (Writer | undefined)[] = new Array(count).fill(undefined);
  for (const { userId, anonymous, documents } of owners ?? []) {
    const owner = { userId, anonymous };
    for (const place of documents) {
      if (place >= count || byPlace[place] !== undefined)
        throw new StateImportError(`the owners of ${namespace} name document ${place} twice or past the end`);
      byPlace[place] = owner;
    }
  }
  return byPlace;
}

/**
 * A saved document of `namespace` as the store keeps it: its Extended JSON read, and its `_id` one
 * an insert would take (a `{_id: {$ne: null}}` is no id a query could name as itself).
 */
export function importedDocument(doc: unknown, namespace: string): Document {
  let decoded: Document;
  try {
    decoded = fromEJSON(doc, { saved: true }) as Document;
  } catch (error) {
    throw new StateImportError(`a document of ${namespace} is not valid Extended JSON: ${(error as Error).message}`);
  }
  const refusal = idRefusal(decoded);
  if (refusal !== null) throw new StateImportError(`a document of ${namespace}: ${refusal}`);
  return decoded;
}
