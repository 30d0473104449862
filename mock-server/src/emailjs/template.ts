/**
 * EmailJS-style template substitution: `{{name}}` inserts a template variable, `{{{name}}}` inserts
 * it raw. In the HTML body `{{name}}` is HTML-escaped (so a visitor's message cannot inject markup);
 * the plain-text fields (subject, addresses, names, text body) are not HTML, so both forms insert the
 * value as it is there. Dotted names reach into nested objects (`{{user.name}}`).
 */

const placeholder = /\{\{\{\s*([^{}]+?)\s*\}\}\}|\{\{\s*([^{}]+?)\s*\}\}/g;

export const escapeHtml = (s: string) =>
  s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;");

function lookup(params: Record<string, unknown>, name: string): unknown {
  if (Object.hasOwn(params, name)) return params[name];
  let value: unknown = params;
  for (const key of name.split(".")) {
    if (value === null || typeof value !== "object" || !Object.hasOwn(value, key)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

/** A variable as text: absent and null are empty, lists are comma-separated, objects are JSON. */
export function variableText(value: unknown): string {
  if (value === undefined || value === null) return "";
  if (typeof value === "string") return value;
  if (Array.isArray(value)) return value.map(variableText).join(", ");
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

export function renderTemplate(source: string, params: Record<string, unknown>, context: "html" | "text"): string {
  return source.replace(placeholder, (_match, raw: string | undefined, escaped: string | undefined) => {
    if (raw !== undefined) return variableText(lookup(params, raw));
    const text = variableText(lookup(params, escaped ?? ""));
    return context === "html" ? escapeHtml(text) : text;
  });
}

const addressPattern = /^[^\s@<>()[\]",;:]+@[^\s@<>()[\]",;:]+$/;

/**
 * Checks a rendered To field (`a@x.org, "B" <b@y.org>`): "empty" when it names no one, "corrupted"
 * when an entry is not an address.
 */
export function checkRecipients(to: string): "ok" | "empty" | "corrupted" {
  const entries = to
    .split(/[,;]/)
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "");
  if (entries.length === 0) return "empty";
  for (const entry of entries) {
    const angle = /<([^<>]*)>\s*$/.exec(entry);
    const address = (angle ? angle[1]! : entry).trim();
    if (!addressPattern.test(address)) return "corrupted";
  }
  return "ok";
}
