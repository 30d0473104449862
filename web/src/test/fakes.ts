/** Test doubles shared by unit tests: an in-memory Storage and a routing fake `fetch`. */

export function memoryStorage(): Storage {
  const items = new Map<string, string>();
  return {
    get length() {
      return items.size;
    },
    clear: () => items.clear(),
    getItem: (key) => items.get(key) ?? null,
    key: (index) => [...items.keys()][index] ?? null,
    removeItem: (key) => {
      items.delete(key);
    },
    setItem: (key, value) => {
      items.set(key, String(value));
    },
  };
}

export interface Recorded {
  method: string;
  origin: string;
  path: string;
  search: string;
  authorization: string | null;
  body: string;
}

export type Handler = (request: Recorded) => Response | Promise<Response>;

/** A fetch that records every request and answers with the handler. */
export function fakeFetch(handler: Handler) {
  const calls: Recorded[] = [];
  const fetch = async (input: Request | string | URL, init?: RequestInit): Promise<Response> => {
    const request = input instanceof Request ? input : new Request(input, init);
    const url = new URL(request.url);
    const recorded: Recorded = {
      method: request.method,
      origin: url.origin,
      path: url.pathname,
      search: url.search,
      authorization: request.headers.get("Authorization"),
      body: request.method === "GET" || request.method === "HEAD" ? "" : await request.text(),
    };
    calls.push(recorded);
    return handler(recorded);
  };
  return { fetch, calls };
}

export function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
}

export function empty(status: number): Response {
  return new Response(null, { status });
}

/** A deferred promise, to hold replies until a test lets them go (no sleeps). */
export function deferred<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}
