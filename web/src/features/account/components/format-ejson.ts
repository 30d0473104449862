/**
 * Custom user data arrives as canonical Extended JSON inside the access token (the SDK leaves it
 * that way). For display, the common wrappers become plain text.
 */
export function formatEjson(value: unknown): string {
  if (value === null || value === undefined) return "—";
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  if (Array.isArray(value)) return value.map(formatEjson).join(", ");
  if (typeof value === "object") {
    const wrapper = value as Record<string, unknown>;
    for (const key of ["$numberInt", "$numberLong", "$numberDouble", "$numberDecimal"]) {
      if (typeof wrapper[key] === "string") return wrapper[key] as string;
    }
    if (typeof wrapper.$oid === "string") return wrapper.$oid;
    if ("$date" in wrapper) {
      const date = wrapper.$date as unknown;
      const ms =
        typeof date === "string"
          ? Date.parse(date)
          : typeof date === "object" &&
              date !== null &&
              typeof (date as { $numberLong?: unknown }).$numberLong === "string"
            ? Number((date as { $numberLong: string }).$numberLong)
            : Number.NaN;
      return Number.isNaN(ms) ? "—" : new Date(ms).toLocaleString();
    }
    return Object.entries(wrapper)
      .map(([key, inner]) => `${key}: ${formatEjson(inner)}`)
      .join("; ");
  }
  return String(value);
}
