/**
 * The limits (config `limits`) a write can pass: the app's, one writer's (per user, per anonymous
 * user: docs/decisions/0018-fair-shares.md), and anonymous users' together. A module of its own:
 * the error catalogue names them too, and importing the store from there would close a circle.
 */
export const quotas = [
  "users",
  "documents",
  "documentBytes",
  "documentsPerUser",
  "documentBytesPerUser",
  "documentsPerAnonymousUser",
  "documentBytesPerAnonymousUser",
  "anonymousDocuments",
  "anonymousDocumentBytes",
  "collections",
] as const;
export type Quota = (typeof quotas)[number];
