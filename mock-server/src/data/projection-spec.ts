/**
 * A projection checked as MongoDB's projection parser (projection_ast::parse) reads it, before
 * anything runs: each field path, the collision of two paths ("Path collision at a.b remaining
 * portion b"), inclusions and exclusions mixed ("Cannot do exclusion on field b in inclusion
 * projection"), expressions and literals in an exclusion, unknown `$` operators, and positional
 * projections outside find() — the texts and the order of MongoDB's walk. What the projection's
 * expressions and find's `$slice`/`$elemMatch` arguments say is left to their own checks.
 * (docs/decisions/0046-stage-specifications.md)
 */
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { isDocument } from "./documents.ts";
import { doubleOf, isNumeric } from "./numeric-operators.ts";
import { bsonElementText } from "./shell-text.ts";
import { keysOf } from "./wide-keys.ts";

/** Why MongoDB's FieldPath refuses a path, or undefined. */
export function fieldPathFailure(path: string): string | undefined {
  if (path === "") return "FieldPath cannot be constructed with empty string";
  if (path.startsWith("$"))
    return "FieldPath field names may not start with '$'. Consider using $getField or $setField.";
  if (path.endsWith(".")) return "FieldPath must not end with a '.'.";
  if (path.split(".").some((part) => part === "")) return "FieldPath field names may not be empty strings.";
  return undefined;
}

function fieldPath(path: string): string[] {
  const failure = fieldPathFailure(path);
  if (failure !== undefined) throw errors.mongo(failure);
  return path.split(".");
}

/**
 * A node of the projection's tree: a path node holds children, a leaf what the path gives. (A
 * sub-projection adds its node whatever is there; MongoDB's lookups then find the first: kept.)
 */
interface PathNode {
  children: Map<string, PathNode | "leaf">;
}

const pathNode = (): PathNode => ({ children: new Map() });

function addChild(node: PathNode, name: string, child: PathNode | "leaf"): void {
  if (!node.children.has(name)) node.children.set(name, child);
}

/** MongoDB's addNodeAtPath: a leaf at `path` under `root`, or its collision with one there. */
function addLeaf(root: PathNode, path: string[]): void {
  let node = root;
  for (let i = 0; i < path.length; i++) {
    const child = node.children.get(path[i]!);
    if (i === path.length - 1) {
      if (child !== undefined) throw errors.mongo(`Path collision at ${path.join(".")}`);
      addChild(node, path[i]!, "leaf");
      return;
    }
    if (child === undefined) {
      const inner = pathNode();
      addChild(node, path[i]!, inner);
      node = inner;
    } else if (child === "leaf") {
      throw errors.mongo(`Path collision at ${path.join(".")} remaining portion ${path.slice(1).join(".")}`);
    } else node = child;
  }
}

/** Where a positional operator (`.$` at the end, `.$.` inside, or the path `$`) is, or -1. */
function positional(path: string): number {
  const inside = path.indexOf(".$.");
  if (inside !== -1) return inside;
  if (path.endsWith(".$")) return path.length - 2;
  return path === "$" ? 0 : -1;
}

export interface ProjectionRules {
  /** find()'s projection: `$slice`, `$elemMatch` and positional projections are its own. */
  find: boolean;
  /** Whether a `$` name is an aggregation expression the engine knows. */
  isExpression(name: string): boolean;
}

/** A boolean or a number: an inclusion when true or not zero (BSONElement::trueValue), else an exclusion. */
const isInclusionOrExclusion = (value: unknown) => typeof value === "boolean" || isNumeric(value);
const included = (value: unknown) => (typeof value === "boolean" ? value : doubleOf(value) !== 0);

/** Refuses a projection MongoDB's parser refuses, with its text (find's or an aggregation's). */
export function checkProjectionSpec(spec: Record<string, unknown>, rules: ProjectionRules): void {
  let type: "inclusion" | "exclusion" | undefined;
  const root = pathNode();

  const expressionLike = (name: string, value: Record<string, unknown>, parent: PathNode) => {
    const keys = keysOf(value);
    if (keys.length !== 1 || !keys[0]!.startsWith("$")) return false;
    const operator = keys[0]!;
    if (rules.find && (operator === "$slice" || operator === "$elemMatch")) {
      addLeaf(parent, fieldPath(name));
      return true;
    }
    if (!rules.find && operator === "$elemMatch") throw errors.mongo("Cannot use $elemMatch in this context");
    if (!rules.isExpression(operator)) {
      // (A `$` name that is no expression is no field path either.)
      throw errors.mongo(`Unknown expression ${operator}`);
    }
    const meta = operator === "$meta";
    if (type !== undefined && type !== "inclusion" && !meta)
      throw errors.mongo("Cannot use expression other than $meta in exclusion projection");
    if (!meta) type = "inclusion";
    addLeaf(parent, fieldPath(name));
    return true;
  };

  const element = (name: string, value: unknown, parent: PathNode, atRoot: boolean) => {
    const at = positional(name);
    if (at !== -1 && !rules.find) throw errors.mongo("Cannot use positional projection in aggregation projection");
    const topId = name === "_id" && atRoot;
    if (isDocument(value)) {
      if (at !== -1) throw errors.mongo("positional projection cannot be used with an expression or sub object");
      fieldPath(name);
      if (expressionLike(name, value, parent)) return;
      // (MongoDB's text ends so: the path is not named.)
      if (keysOf(value).length === 0)
        throw errors.mongo("An empty sub-projection is not a valid value. Found empty object at path");
      const inner = pathNode();
      addChild(parent, name, inner);
      for (const key of keysOf(value)) element(key, value[key], inner, false);
      return;
    }
    if (isInclusionOrExclusion(value)) {
      if (included(value)) {
        addLeaf(parent, fieldPath(at === -1 ? name : name.slice(0, at)));
        if (!topId) {
          if (type === "exclusion") throw errors.mongo(`Cannot do inclusion on field ${name} in exclusion projection`);
          type = "inclusion";
        }
      } else {
        addLeaf(parent, fieldPath(name));
        if (!topId) {
          if (type === "inclusion") throw errors.mongo(`Cannot do exclusion on field ${name} in inclusion projection`);
          type = "exclusion";
        }
      }
      return;
    }
    if (at !== -1) throw errors.mongo("positional projection cannot be used with a literal");
    addLeaf(parent, fieldPath(name));
    if (type === "exclusion")
      throw errors.mongo(`Cannot use an expression ${bsonElementText(name, value)} in an exclusion projection`);
    type = "inclusion";
  };

  for (const key of keysOf(spec)) element(key, spec[key], root, true);
}
