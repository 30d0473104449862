/**
 * The inspector's one control client (the generated one), on the emulator's own origin. When the
 * emulator requires a control token, the inspector asks for it once per browser session.
 */
import {
  createMockControlClient,
  type MockControlClient,
  type MockControlComponents,
} from "@harness/openapi/mock-control";

export type Schemas = MockControlComponents["schemas"];

const tokenKey = "mock-control-token";

function make(): MockControlClient {
  const controlToken = sessionStorage.getItem(tokenKey) ?? undefined;
  return createMockControlClient({ baseUrl: location.origin, ...(controlToken ? { controlToken } : {}) });
}

export let client: MockControlClient = make();

/** Whether a control token was given in this browser session (a 401 then means a wrong one). */
export function hasControlToken(): boolean {
  return sessionStorage.getItem(tokenKey) !== null;
}

export function setControlToken(token: string): void {
  if (token) sessionStorage.setItem(tokenKey, token);
  else sessionStorage.removeItem(tokenKey);
  client = make();
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** The data of a control call, or an ApiError with the API's own message. */
export async function unwrap<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok) {
    const message = (error as { error?: string } | undefined)?.error ?? `${response.status} ${response.statusText}`;
    throw new ApiError(response.status, message);
  }
  return data as T;
}
