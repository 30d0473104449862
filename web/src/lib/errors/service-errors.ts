/**
 * The errors the two services answer, as values the UI can reason about. App Services replies
 * `{error, error_code?, link}` (shape from the generated types); EmailJS replies a status and a
 * plain text; the EmailJS SDK also rejects with bare strings for its own checks.
 */
import type { AppServicesError } from "@harness/openapi/app-services";

/** A non-2xx reply of App Services. */
export class AppServicesRequestError extends Error {
  readonly status: number;
  /** The reply body when it has the documented error shape. */
  readonly body: AppServicesError | undefined;

  /** How long the reply asked to wait before trying again (`Retry-After`), when it said. */
  readonly retryAfterMs: number | undefined;

  constructor(status: number, body: unknown, retryAfterMs?: number) {
    const parsed = isErrorBody(body) ? body : undefined;
    super(parsed?.error ?? `App Services answered ${status}`);
    this.name = "AppServicesRequestError";
    this.status = status;
    this.body = parsed;
    this.retryAfterMs = retryAfterMs;
  }

  /** The error of a reply, its `Retry-After` (seconds or an HTTP date) kept. */
  static fromResponse(response: Response, body: unknown): AppServicesRequestError {
    const header = response.headers.get("retry-after");
    let wait: number | undefined;
    if (header !== null && /^\d+$/.test(header.trim())) wait = Number(header) * 1000;
    else if (header !== null && !Number.isNaN(Date.parse(header))) wait = Math.max(0, Date.parse(header) - Date.now());
    return new AppServicesRequestError(response.status, body, wait);
  }

  /**
   * The service cannot answer for now (503), or the proxy in front of it found no instance that
   * could (502, 504): trying again shortly is right.
   */
  get unavailable(): boolean {
    return this.status === 502 || this.status === 503 || this.status === 504;
  }

  get code(): string | undefined {
    return this.body?.error_code;
  }

  get serviceMessage(): string {
    return this.body?.error ?? "";
  }
}

/** EmailJS refused or failed to send (an `EmailJSResponseStatus`, or one of the SDK's own string rejections). */
export class EmailSendError extends Error {
  constructor(
    /** 0 when the SDK refused before sending (configuration problem). */
    readonly status: number,
    readonly text: string,
  ) {
    super(text || `EmailJS answered ${status}`);
    this.name = "EmailSendError";
  }
}

function isErrorBody(body: unknown): body is AppServicesError {
  return typeof body === "object" && body !== null && typeof (body as { error?: unknown }).error === "string";
}

/**
 * Does this 401 mean the access token is no longer good, so a refresh may help? The SDK's rule:
 * `error_code: "InvalidSession"` or `error: "unauthorized"` — except that a reply naming wrong
 * credentials (`InvalidPassword`, e.g. linking an address that is not confirmed yet) is not about
 * the session, and a new token cannot change its answer.
 */
export function isInvalidSessionBody(body: unknown): boolean {
  if (typeof body !== "object" || body === null) return false;
  const { error, error_code } = body as { error?: unknown; error_code?: unknown };
  return error_code === "InvalidSession" || (error === "unauthorized" && error_code !== "InvalidPassword");
}

/** A fetch that never reached the server (offline, DNS, CORS, connection refused). */
export function isNetworkError(error: unknown): boolean {
  return error instanceof TypeError && !(error instanceof AppServicesRequestError);
}

export function isAbortError(error: unknown): boolean {
  return error instanceof DOMException && error.name === "AbortError";
}

/** The result of an openapi-fetch call, reduced to what `expectOk` needs. */
interface FetchResult<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** Resolves with the reply's data, or throws the service's error as an `AppServicesRequestError`. */
export async function expectOk<T>(call: Promise<FetchResult<T>>): Promise<T> {
  const { data, error, response } = await call;
  // openapi-fetch leaves empty bodies unread; read them so the browser does not report the
  // request as aborted.
  if (!response.bodyUsed) await response.arrayBuffer().catch(() => undefined);
  if (!response.ok) throw AppServicesRequestError.fromResponse(response, error);
  return data as T;
}
