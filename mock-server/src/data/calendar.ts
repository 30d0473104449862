/**
 * Dates in a time zone, for the date operators (date-operators.ts): a zone is an Olson name
 * (the platform's time zone data, through `Intl`) or a fixed UTC offset; a date's local fields
 * and weeks (ISO 8601 and Sunday-based), and a UTC instant from local fields.
 */
import { appServicesErrors as errors } from "../errors/catalogue.ts";

const minuteMs = 60_000;
const dayMs = 86_400_000;

export type Zone = { offset: number } | { name: string; format: Intl.DateTimeFormat };

export const utc: Zone = { offset: 0 };

const zones = new Map<string, Zone>();

/**
 * A zone from MongoDB's forms: an Olson identifier ("America/New_York", "GMT", "UTC"), or an
 * offset "+hh:mm", "+hhmm", "+hh" (or "-").
 */
export function zoneOf(timezone: unknown): Zone {
  if (timezone === undefined || timezone === null) return utc;
  if (typeof timezone !== "string")
    throw errors.mongo(
      `timezone must evaluate to a string, found ${typeof timezone === "number" ? "double" : typeof timezone}`,
    );
  const known = zones.get(timezone);
  if (known) return known;
  let zone: Zone;
  const fixed = /^([+-])(\d{2})(?::?(\d{2}))?$/.exec(timezone);
  if (fixed) {
    const minutes = Number(fixed[2]) * 60 + Number(fixed[3] ?? 0);
    zone = { offset: fixed[1] === "-" ? -minutes : minutes };
  } else {
    let format: Intl.DateTimeFormat;
    try {
      if (!/^[A-Za-z][A-Za-z0-9_+\-/]*$/.test(timezone)) throw new RangeError(timezone);
      format = new Intl.DateTimeFormat("en-US", {
        timeZone: timezone,
        hourCycle: "h23",
        year: "numeric",
        month: "numeric",
        day: "numeric",
        hour: "numeric",
        minute: "numeric",
        second: "numeric",
        era: "short",
      });
    } catch {
      throw errors.mongo(`unrecognized time zone identifier: "${timezone}"`);
    }
    zone = { name: timezone, format };
  }
  if (zones.size < 1_000) zones.set(timezone, zone);
  return zone;
}

/** The zone's offset from UTC at an instant, in minutes. */
export function offsetAt(zone: Zone, ms: number): number {
  if ("offset" in zone) return zone.offset;
  const parts: Record<string, string> = {};
  for (const part of zone.format.formatToParts(new Date(ms))) parts[part.type] = part.value;
  let year = Number(parts.year);
  if (parts.era === "BC" || parts.era === "B") year = 1 - year;
  const local = Date.UTC(
    year,
    Number(parts.month) - 1,
    Number(parts.day),
    Number(parts.hour),
    Number(parts.minute),
    Number(parts.second),
  );
  const wholeSeconds = Math.floor(ms / 1000) * 1000;
  return Math.round((local - wholeSeconds) / minuteMs);
}

export interface LocalDate {
  year: number;
  /** 1–12. */
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  millisecond: number;
  /** 1 (Sunday) – 7 (Saturday). */
  dayOfWeek: number;
  /** 1–366. */
  dayOfYear: number;
  /** Minutes east of UTC. */
  offset: number;
}

/** A UTC instant's fields in a zone. */
export function localDate(ms: number, zone: Zone = utc): LocalDate {
  const offset = offsetAt(zone, ms);
  const d = new Date(ms + offset * minuteMs);
  const year = d.getUTCFullYear();
  return {
    year,
    month: d.getUTCMonth() + 1,
    day: d.getUTCDate(),
    hour: d.getUTCHours(),
    minute: d.getUTCMinutes(),
    second: d.getUTCSeconds(),
    millisecond: d.getUTCMilliseconds(),
    dayOfWeek: d.getUTCDay() + 1,
    dayOfYear: Math.round((utcDay(year, d.getUTCMonth() + 1, d.getUTCDate()) - utcDay(year, 1, 1)) / dayMs) + 1,
    offset,
  };
}

/** Midnight UTC of a calendar day (months and days may run over, as Date.UTC lets them). */
export function utcDay(year: number, month: number, day: number): number {
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day);
  return d.getTime();
}

/**
 * The UTC instant of local fields in a zone. A wall time a transition repeats is read at the later
 * offset, and one it skips at the offset before it (so pushed forward), as MongoDB reads them.
 */
export function fromLocal(
  zone: Zone,
  year: number,
  month: number,
  day: number,
  hour = 0,
  minute = 0,
  second = 0,
  millisecond = 0,
): number {
  const local = utcDay(year, month, day) + ((hour * 60 + minute) * 60 + second) * 1000 + millisecond;
  if ("offset" in zone) return local - zone.offset * minuteMs;
  const before = local - offsetAt(zone, local - dayMs / 2) * minuteMs;
  const after = local - offsetAt(zone, local + dayMs / 2) * minuteMs;
  if (before === after) return before;
  const reads = (instant: number) => instant + offsetAt(zone, instant) * minuteMs === local;
  if (reads(before) !== reads(after)) return reads(before) ? before : after;
  return Math.max(before, after);
}

/** ISO 8601 week fields of a calendar day: its week-numbering year, week (1–53) and day (1 Monday – 7). */
export function isoWeekOf(
  year: number,
  month: number,
  day: number,
): { isoYear: number; isoWeek: number; isoDay: number } {
  const midnight = utcDay(year, month, day);
  const isoDay = ((new Date(midnight).getUTCDay() + 6) % 7) + 1;
  // The week's Thursday decides its year.
  const thursday = new Date(midnight + (4 - isoDay) * dayMs);
  const isoYear = thursday.getUTCFullYear();
  const isoWeek = Math.floor((thursday.getTime() - utcDay(isoYear, 1, 1)) / (7 * dayMs)) + 1;
  return { isoYear, isoWeek, isoDay };
}

/** The first day (Monday) of an ISO week-numbering year's week 1, as midnight UTC. */
export function isoYearStart(isoYear: number): number {
  const january4 = utcDay(isoYear, 1, 4);
  const isoDay = ((new Date(january4).getUTCDay() + 6) % 7) + 1;
  return january4 - (isoDay - 1) * dayMs;
}

/** The week of the year with Sunday first (00–53: days before the first Sunday are week 0). */
export function sundayWeek(dayOfYear: number, dayOfWeek: number): number {
  return Math.floor((dayOfYear - 1 + 7 - (dayOfWeek - 1)) / 7);
}

export { dayMs, minuteMs };
