/**
 * App Services rules, applied to every MongoDB action a user makes, per namespace
 * (`database.collection`, else `default`), in one of two forms. The short form: `read` / `write` /
 * `insert` / `delete` are `true`, `false` or a query filter over documents, in which `%%user.id`,
 * `%%user.type` and `%%user.data.<field>` expand to the caller. An exported app's form: roles and
 * filters (role-rules.ts). Server-side code running as system bypasses rules.
 */
import type { AppConfig, CollectionRule } from "../config/app-config.ts";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { appExpansions, type Expansions, ExpressionError } from "../functions/can-evaluate.ts";
import { isAnonymousUser, type StoredUser, type Writer } from "../store/store.ts";
import type { Document } from "./documents.ts";
import { namesCustomData, type RuleAction, roleCondition, UnsupportedRule } from "./role-rules.ts";

/** Who runs an action: the system (no rules), or a user, with the request it came in (`%%request`). */
export type Principal = { kind: "system" } | { kind: "user"; user: StoredUser; request?: () => Document };

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

/** Reads a user's custom data document (the app's custom user data collection), if any. */
export type CustomDataReader = (userId: string) => Promise<Document | undefined>;

export class Rules {
  /** The caller's custom data, read by `prepare` when a rule of the app names it. */
  private customData: Document | undefined;

  constructor(
    private readonly config: AppConfig,
    private readonly readCustomData?: CustomDataReader,
  ) {}

  /** Reads what the rules will need of the caller before they are applied (its custom data). */
  async prepare(principal: Principal): Promise<void> {
    if (principal.kind === "system" || !this.readCustomData || this.customData !== undefined) return;
    if (!this.config.rules || !namesCustomData(this.config.rules)) return;
    this.customData = (await this.readCustomData(principal.user.id)) ?? {};
  }

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

  /** What the namespace's roles and filters let the user do (role-rules.ts). */
  private roles(
    { user, request }: { user: StoredUser; request?: () => Document },
    rule: CollectionRule,
    [database, collection]: [string, string],
    action: RuleAction,
  ): RuleFilter {
    const expansions: Expansions = {
      user: () => ({
        id: user.id,
        type: user.type,
        data: user.data,
        identities: user.identities,
        custom_data: this.customData ?? {},
      }),
      args: () => {
        throw new ExpressionError("%%args is not available to data access rules");
      },
      ...appExpansions(this.config),
      request:
        request ??
        (() => {
          throw new ExpressionError("%%request is not available to this action (no client request)");
        }),
    };
    try {
      const condition = roleCondition(rule, action, expansions);
      return condition === true ? {} : condition === false ? null : condition;
    } catch (error) {
      if (error instanceof UnsupportedRule)
        throw errors.mongo(`the rules of '${database}.${collection}' cannot be evaluated here: ${error.message}`);
      throw error;
    }
  }

  private decide(principal: Principal, database: string, collection: string, action: RuleAction): RuleFilter {
    if (principal.kind === "system") return {};
    const rule = this.rule(database, collection);
    if (rule.roles !== undefined || rule.filters !== undefined)
      return this.roles(principal, rule, [database, collection], action);
    if (action === "write") return this.filter(principal, rule.write);
    return this.filter(principal, rule[action] ?? rule.write);
  }

  read(principal: Principal, database: string, collection: string): RuleFilter {
    return this.decide(principal, database, collection, "read");
  }

  write(principal: Principal, database: string, collection: string): RuleFilter {
    return this.decide(principal, database, collection, "write");
  }

  insert(principal: Principal, database: string, collection: string): RuleFilter {
    return this.decide(principal, database, collection, "insert");
  }

  delete(principal: Principal, database: string, collection: string): RuleFilter {
    return this.decide(principal, database, collection, "delete");
  }
}

/** `query AND filter` (the rule's filter narrows what an action can see or touch). */
export function narrow(query: Document, filter: Document): Document {
  if (Object.keys(filter).length === 0) return query;
  if (Object.keys(query).length === 0) return filter;
  return { $and: [query, filter] };
}
