/**
 * App Services rules, applied to every MongoDB action a user makes, per namespace
 * (`database.collection`, else `default`), in one of two forms. The short form: `read` / `write` /
 * `insert` / `delete` are `true`, `false` or a query filter over documents, in which `%%user.id`,
 * `%%user.type` and `%%user.data.<field>` expand to the caller. An exported app's form: roles and
 * filters (role-rules.ts). Server-side code running as system bypasses rules.
 */
import type { AppConfig, CollectionRule } from "../config/app-config.ts";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import {
  appExpansions,
  Computed,
  callsFunctions,
  type Expansions,
  ExpressionError,
  resolveFunctions,
} from "../functions/can-evaluate.ts";
import { isAnonymousUser, type StoredUser, type Writer } from "../store/store.ts";
import type { Document } from "./documents.ts";
import { compileQuery } from "./query-engine.ts";
import { mongoError } from "./query-jobs.ts";
import {
  type FieldCut,
  namesCustomData,
  type ReadShape,
  type RuleAction,
  readShape,
  roleCondition,
  UnsupportedRule,
  writeCuts,
} from "./role-rules.ts";

/**
 * Who runs an action: the system (no rules), or a user, with the request it came in (`%%request`)
 * and, inside a function a rule expression called (`%function`), how many such calls deep it is.
 * `withoutCustomData`: the user's custom data is not read (`%%user.custom_data` is `{}`), as for
 * an HTTPS endpoint or the Data API whose `fetch_custom_user_data` is off. `address`: the client
 * address (its key: http/client-address.ts) of the request the action serves, when a client's —
 * its turn among addresses in the query workers' queue.
 */
export type Principal = { kind: "system"; address?: string } | UserPrincipal;
export type UserPrincipal = {
  kind: "user";
  user: StoredUser;
  request?: () => Document;
  address?: string;
  ruleDepth?: number;
  withoutCustomData?: boolean;
};

/**
 * How many rule expressions' `%function`s may be inside one another: a function a rule calls may
 * act on collections whose rules call functions, but a rule whose function acts on that rule's
 * own collection would otherwise call it again without end.
 */
export const maxRuleDepth = 3;

/** Whom a principal's writes count for: a user (docs/decisions/0018-fair-shares.md), or no one (system). */
export function writerOf(principal: Principal): Writer | undefined {
  return principal.kind === "user"
    ? { userId: principal.user.id, anonymous: isAnonymousUser(principal.user) }
    : undefined;
}

/** A filter to AND with the operation's, `null` to deny, or `{}` for no restriction. */
export type RuleFilter = Document | null;

function expand(value: unknown, user: StoredUser): unknown {
  if (value instanceof Computed) return value.value;
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

/** Runs one of the app's functions for a rule's `%function`, as the user (its own settings apply). */
export type RuleFunctionCall = (name: string, args: unknown[], principal: UserPrincipal) => Promise<unknown>;

/** The error of an action whose namespace's rules this server does not evaluate. */
const refusal = (namespace: string, what: string) =>
  errors.mongo(`the rules of '${namespace}' cannot be evaluated here: ${what}`);

/** What `decide` answers, an UnsupportedRule of the rules of `database.collection` as the action's error. */
function evaluated<T>(database: string, collection: string, decide: () => T): T {
  try {
    return decide();
  } catch (error) {
    if (error instanceof UnsupportedRule) throw refusal(`${database}.${collection}`, error.message);
    throw error;
  }
}

const callsFunctionsIn = new WeakMap<CollectionRule, boolean>();

/** Whether a namespace's rule calls functions (`%function`), known once per rule object. */
function ruleCallsFunctions(rule: CollectionRule): boolean {
  let calls = callsFunctionsIn.get(rule);
  if (calls === undefined) {
    calls = callsFunctions(rule);
    callsFunctionsIn.set(rule, calls);
  }
  return calls;
}

/** The rules of an action of this app: its custom data and functions at hand when a rule names them. */
export function rulesOf(app: {
  config: AppConfig;
  customUserDocument?(userId: string): Promise<Document | undefined>;
  callRuleFunction?(name: string, args: unknown[], principal: UserPrincipal): Promise<unknown>;
}): Rules {
  return new Rules(
    app.config,
    app.customUserDocument ? (id) => app.customUserDocument!(id) : undefined,
    app.callRuleFunction ? (name, args, principal) => app.callRuleFunction!(name, args, principal) : undefined,
  );
}

export class Rules {
  /** The caller's custom data, read by `prepare` when a rule of the app names it. */
  private customData: Document | undefined;
  /** Rules whose `%function`s `prepare` has called for this caller, by namespace. */
  private readonly evaluated = new Map<string, CollectionRule>();

  constructor(
    private readonly config: AppConfig,
    private readonly readCustomData?: CustomDataReader,
    private readonly callFunction?: RuleFunctionCall,
  ) {}

  /**
   * Reads what the rules of these collections will need of the caller before they are applied:
   * its custom data, and what their `%function`s return (each called once per action, as the
   * caller, whichever role or action needs it; what a function throws is the action's error).
   */
  async prepare(principal: Principal, database?: string, collections: string[] = []): Promise<void> {
    const { rules, schemas } = this.config;
    if (principal.kind === "system" || (!rules && !schemas)) return;
    if (
      this.readCustomData &&
      this.customData === undefined &&
      principal.withoutCustomData !== true &&
      ((rules && namesCustomData(rules)) || (schemas && namesCustomData(schemas)))
    )
      this.customData = (await this.readCustomData(principal.user.id)) ?? {};
    if (database === undefined || !rules) return;
    for (const collection of collections) {
      const namespace = `${database}.${collection}`;
      const rule = rules[namespace] ?? rules.default;
      if (!rule || this.evaluated.has(namespace) || !ruleCallsFunctions(rule)) continue;
      this.evaluated.set(namespace, await this.withFunctionsCalled(principal, rule, namespace));
    }
  }

  private async withFunctionsCalled(
    principal: UserPrincipal,
    rule: CollectionRule,
    namespace: string,
  ): Promise<CollectionRule> {
    const refuse = (what: string) => refusal(namespace, what);
    const call = this.callFunction;
    if (!call) throw refuse("%function (this action cannot call the app's functions)");
    const depth = principal.ruleDepth ?? 0;
    if (depth >= maxRuleDepth)
      throw refuse(`%function, called from the rules of a function's action ${depth} deep (at most ${maxRuleDepth})`);
    const inner: UserPrincipal = { ...principal, ruleDepth: depth + 1 };
    try {
      return (await resolveFunctions(rule, this.expansions(principal), (name, args) =>
        call(name, args, inner),
      )) as CollectionRule;
    } catch (error) {
      if (error instanceof ExpressionError) throw refuse(`%function: ${error.message}`);
      throw error;
    }
  }

  private rule(database: string, collection: string): CollectionRule {
    const rules = this.config.rules;
    const rule =
      this.evaluated.get(`${database}.${collection}`) ?? rules?.[`${database}.${collection}`] ?? rules?.default;
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
    principal: UserPrincipal,
    rule: CollectionRule,
    [database, collection]: [string, string],
    action: RuleAction,
  ): RuleFilter {
    return evaluated(database, collection, () => {
      const condition = roleCondition(rule, action, this.expansions(principal));
      return condition === true ? {} : condition === false ? null : condition;
    });
  }

  /** What the expansions of an expression stand for, for this caller (its custom data read by `prepare`). */
  expansions({ user, request }: UserPrincipal): Expansions {
    return {
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
  }

  private decide(principal: Principal, database: string, collection: string, action: RuleAction): RuleFilter {
    if (principal.kind === "system") return {};
    const rule = this.rule(database, collection);
    if (rule.roles !== undefined || rule.filters !== undefined)
      return this.roles(principal, rule, [database, collection], action);
    if (action === "write") return this.filter(principal, rule.write);
    return this.filter(principal, rule[action] ?? rule.write);
  }

  /**
   * How the documents a read returns are cut down for this caller (field-level permissions of
   * some fields, filters' projections), or undefined when they are returned whole.
   */
  readShape(principal: Principal, database: string, collection: string): ReadShape | undefined {
    if (principal.kind === "system") return undefined;
    const rule = this.rule(database, collection);
    if (rule.roles === undefined && rule.filters === undefined) return undefined;
    return evaluated(database, collection, () => readShape(rule, this.expansions(principal)));
  }

  /**
   * Which fields of a document the caller may write (`inserting`: a new one), where some roles
   * write some fields only.
   */
  writeCuts(principal: Principal, database: string, collection: string, inserting = false): FieldCut[] | undefined {
    if (principal.kind === "system") return undefined;
    const rule = this.rule(database, collection);
    if (rule.roles === undefined) return undefined;
    return evaluated(database, collection, () => writeCuts(rule, this.expansions(principal), inserting));
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

/** A caller the rules are checked for at start, where no request is (`ruleProblems`). */
const standIn: UserPrincipal = {
  kind: "user",
  user: { id: "000000000000000000000000", type: "normal", data: {}, identities: [], disabled: false, createdAt: 0 },
  request: () => ({
    httpMethod: "POST",
    httpReferrer: "",
    httpUserAgent: "",
    rawQueryString: "",
    remoteIPAddress: "127.0.0.1",
    requestHeaders: {},
  }),
};

const refusedPrefix = /^the rules of '.*?' cannot be evaluated here: /s;

/** A rule's filter compiled as an action's query would be, its error in MongoDB's words. */
function compiled(filter: Document): void {
  try {
    compileQuery(filter);
  } catch (error) {
    mongoError(error);
  }
}

/**
 * What of an app's rules this server does not evaluate, one line per namespace (the default rule's
 * last), for the warning at start: their actions are refused with what it is. Found by deciding
 * every action of each namespace for a stand-in caller and compiling what they decide, so what
 * only another caller's roles reach is not seen; a rule that calls the app's functions is decided
 * per caller only (its functions are called then), and is not checked.
 */
export function ruleProblems(config: AppConfig): string[] {
  const rules = config.rules;
  if (!rules) return [];
  const checker = new Rules(config);
  const problems: string[] = [];
  const entries = Object.entries(rules).sort(([a], [b]) => Number(a === "default") - Number(b === "default"));
  for (const [namespace, rule] of entries) {
    if (callsFunctions(rule)) continue;
    const dot = namespace.indexOf(".");
    // (The default rule: a namespace no rule names.)
    const [database, collection] =
      namespace === "default" || dot < 0 ? ["\u0000", "default"] : [namespace.slice(0, dot), namespace.slice(dot + 1)];
    try {
      for (const action of ["read", "write", "insert", "delete"] as const) {
        const filter = checker[action](standIn, database, collection);
        if (filter) compiled(filter);
      }
      checker.readShape(standIn, database, collection);
      checker.writeCuts(standIn, database, collection, true);
      checker.writeCuts(standIn, database, collection, false);
    } catch (error) {
      const what = (error as Error).message.replace(refusedPrefix, "");
      problems.push(
        namespace === "default"
          ? `default rules (${what}: the actions they cover are refused)`
          : `rules of '${namespace}' (${what}: its actions are refused)`,
      );
    }
  }
  return problems;
}
