/**
 * How long the database keeps what only grows (`--retention`): mail whose delivery has ended, and
 * confirmation and reset tokens past their expiry. Sessions past their lifetime need no period: an
 * expired session already answers as one not found, so it goes as soon as it expires. The sweeps
 * that apply them are runtime/retention-sweeper.ts; see docs/decisions/0030-retention.md.
 */
export interface Retention {
  /**
   * How long a message is kept once its delivery has ended: sent or finally failed over SMTP, or
   * captured without SMTP. A message still queued for delivery is never removed.
   */
  mailMs: number;
  /**
   * How long a confirmation or reset token is kept past its expiry. While it is kept, a used or
   * expired link answers `userpass token is expired or invalid`; once removed, `invalid token data`
   * (as an unknown one).
   */
  tokensMs: number;
}

const day = 24 * 60 * 60 * 1000;

export const defaultRetention: Readonly<Retention> = { mailMs: 30 * day, tokensMs: 7 * day };

/** How the sweeps run: every `everyMs`, `batch` rows a statement (tests shorten them). */
export const defaultSweeps = { everyMs: 10 * 60 * 1000, batch: 1000 } as const;

const names: Record<string, keyof Retention> = { mail: "mailMs", tokens: "tokensMs" };
const units: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: day };

/** A period with its unit (`12h`, `30d`), or undefined when it is not one. */
function period(text: string): number | undefined {
  const match = /^(\d+)(s|m|h|d)$/.exec(text.trim());
  return match ? Number(match[1]) * units[match[2]!]! : undefined;
}

/** `mail=30d,tokens=7d`: the periods it names, or why it cannot be read. */
export function parseRetention(text: string): Partial<Retention> | string {
  const retention: Partial<Retention> = {};
  for (const pair of text.split(",").map((p) => p.trim())) {
    const at = pair.indexOf("=");
    if (at <= 0) return `'${pair}' is not KEY=PERIOD`;
    const name = pair.slice(0, at).trim();
    const key = names[name];
    if (!key) return `'${name}' is not one of ${Object.keys(names).join(", ")}`;
    if (retention[key] !== undefined) return `${name} is given twice`;
    const ms = period(pair.slice(at + 1));
    if (ms === undefined || ms < 60_000 || ms > 3650 * day)
      return `${name}: '${pair.slice(at + 1).trim()}' is not a period from 1m to 3650d (a number with s, m, h or d)`;
    retention[key] = ms;
  }
  return retention;
}
