/**
 * A documented subset of App Services rules, applied to every MongoDB action a user makes: per
 * namespace (`database.collection`, else `default`), `read` / `write` / `insert` / `delete` are
 * `true`, `false` or a query filter over documents, in which `%%user.id`, `%%user.type` and
 * `%%user.data.<field>` expand to the caller. Server-side code running as system bypasses rules.
 */
import type { AppConfig, CollectionRule } from "../config/app-config.ts";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import type { StoredUser, Writer } from "../store/store.ts";
import type { Document } from "./documents.ts";

export type Principal = { kind: "system" } | { kind: "user"; user: StoredUser };

/** A user all of whose identities are anonymous (held to the anonymous users' limits). */
export const isAnonymousUser = (user: StoredUser) =>
  user.identities.length > 0 && user.identities.every((identity) => identity.provider_type === "anon-user");

/** Whom a principal's writes count for: a user (docs/decisions/0018-fair-shares.md), or no one (system). */
export function writerOf(principal: Principal): Writer | undefined {
  return principal.kind === "user"
    ? { userId: principal.user.id, anonymous: isAnonymousUser(principal.user) }
    : undefined;
}

/** A filter to AND with the operation's, `null` to deny, or `{}` for no restriction. */
export type RuleFilter = Document | null;

function expand(value: unknown, user: StoredUser): unknown {
  if (typeof value === "string" && value.startsWith("%%user.")) {
    const path = value.slice("%%user.".length);
    if (path === "id") return user.id;
    if (path === "type") return user.type;
    if (path.startsWith("data.")) return user.data[path.slice(5)];
    return undefined;
  }
  if (Array.isArray(value)) return value.map((v) => expand(v, user));
  if (value !== null && typeof value === "object") {
    const out: Document = {};
    for (const [k, v] of Object.entries(value)) out[k] = expand(v, user);
    return out;
  }
  return value;
}

export class Rules {
  constructor(private readonly config: AppConfig) {}

  private rule(database: string, collection: string): CollectionRule {
    const rules = this.config.rules;
    const rule = rules?.[`${database}.${collection}`] ?? rules?.default;
    if (!rule) throw errors.mongo(`no rule exists for namespace '${database}.${collection}'`);
    return rule;
  }

  private filter(principal: Principal, expression: CollectionRule["read"]): RuleFilter {
    if (principal.kind === "system") return {};
    if (expression === undefined || expression === false) return null;
    if (expression === true) return {};
    return expand(expression, principal.user) as Document;
  }

  read(principal: Principal, database: string, collection: string): RuleFilter {
    if (principal.kind === "system") return {};
    const rule = this.rule(database, collection);
    return this.filter(principal, rule.read ?? rule.write);
  }

  write(principal: Principal, database: string, collection: string): RuleFilter {
    if (principal.kind === "system") return {};
    return this.filter(principal, this.rule(database, collection).write);
  }

  insert(principal: Principal, database: string, collection: string): RuleFilter {
    if (principal.kind === "system") return {};
    const rule = this.rule(database, collection);
    return this.filter(principal, rule.insert ?? rule.write);
  }

  delete(principal: Principal, database: string, collection: string): RuleFilter {
    if (principal.kind === "system") return {};
    const rule = this.rule(database, collection);
    return this.filter(principal, rule.delete ?? rule.write);
  }
}

/** `query AND filter` (the rule's filter narrows what an action can see or touch). */
export function narrow(query: Document, filter: Document): Document {
  if (Object.keys(filter).length === 0) return query;
  if (Object.keys(query).length === 0) return filter;
  return { $and: [query, filter] };
}
