/** Waiting on conditions (never on time): poll a check until it holds or a deadline passes. */
export async function until<T>(
  check: () => T | Promise<T>,
  what: string,
  { timeoutMs = 5000, everyMs = 5 }: { timeoutMs?: number; everyMs?: number } = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
