/**
 * What a fuzz case is: the request to make (its token, body and corruptions, by kind: the harness
 * makes the real values at run time) and, when known, the reply it must get. cases.ts draws them
 * from the documents, semantics.ts from queries whose answer is known.
 */

/** Tokens the harness makes at run time (it holds the emulator's key and state). */
export type TokenKind =
  | "none"
  | "access"
  | "refresh"
  | "user-access"
  | "user-refresh"
  | "other-app-access"
  | "expired"
  | "alg-none"
  | "forged-signature"
  | "wrong-secret"
  | "refresh-as-access"
  | "garbage"
  | "empty-bearer"
  | "basic"
  | "huge"
  | "extra-segment"
  | "bad-payload"
  | "claims";

export interface TokenSpec {
  kind: TokenKind;
  /** For `claims`: a payload signed with the emulator's own key (so only the claim checks stand in the way). */
  claims?: Record<string, unknown>;
  /** Where the token goes (the query works for change streams only). */
  placement: "header" | "query" | "both";
}

export type BodySpec =
  | { kind: "none" }
  | { kind: "json"; value: unknown; inject: Injection | null }
  | { kind: "text"; text: string }
  | { kind: "huge"; bytes: number; shape: "string-field" | "garbage" | "array" }
  | { kind: "deep"; depth: number; open: "[" | "{" }
  | { kind: "multipart"; parts: FormPart[]; corruption: MultipartCorruption };

export type Injection =
  | { kind: "proto"; payload: string }
  | { kind: "truncate"; keep: number }
  | { kind: "trailing"; garbage: string }
  | { kind: "duplicate-key" };

export interface FormPart {
  name: string;
  value: string;
  filename?: string;
  contentType?: string;
}

export type MultipartCorruption =
  | "none"
  | "no-final-boundary"
  | "wrong-boundary"
  | "no-boundary-param"
  | "truncated"
  | "bare-lf"
  | "no-disposition"
  | "too-many-parts";

export interface FuzzCase {
  /** The operation aimed at; null for a route no operation has. */
  target: string | null;
  /** What was done to the request (for the statistics). */
  mutation: string;
  method: string;
  path: string;
  query: [string, string][];
  token: TokenSpec;
  contentType: string | null;
  origin: string | null;
  body: BodySpec;
  /** The reply's body (parsed JSON) the emulator must answer, when it is known (semantics.ts). */
  expect?: unknown;
}
