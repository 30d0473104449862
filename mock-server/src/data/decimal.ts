/**
 * Decimal128 arithmetic as MongoDB does it (IEEE 754-2008 decimal128): a value is a coefficient of
 * at most 34 digits and an exponent, results keep the exponent IEEE prefers (1.10 + 2.20 = 3.30,
 * not 3.3), are rounded half to even to 34 digits, and overflow to infinity. A double meets a
 * decimal as MongoDB converts it, rounded to 15 significant digits (0.1 → 0.100000000000000); an
 * int or a long exactly. BigInt does the digits: the decimal libraries normalize their results
 * (3.3), which a client would see in the value's text.
 */
import { Decimal128 } from "bson";

/** A decimal: NaN, an infinity, or (-1)^negative × coefficient × 10^exponent. */
export type Dec =
  | { kind: "nan" }
  | { kind: "infinite"; negative: boolean }
  | { kind: "finite"; negative: boolean; coefficient: bigint; exponent: number };

const maxDigits = 34;
const maxExponent = 6111;
const minExponent = -6176;
const nan: Dec = { kind: "nan" };

const finite = (negative: boolean, coefficient: bigint, exponent: number): Dec => ({
  kind: "finite",
  negative,
  coefficient,
  exponent,
});

const pow10 = (n: number): bigint => 10n ** BigInt(n);
const digitsOf = (n: bigint): number => (n === 0n ? 1 : n.toString().length);

const decimalText = /^([+-])?(\d+)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/;

/** A decimal from text as Decimal128 writes it (or MongoDB's `$toDecimal` reads it); null if it is none. */
export function parseDecimal(text: string): Dec | null {
  const trimmed = text.trim();
  const lower = trimmed.toLowerCase();
  if (lower === "nan" || lower === "-nan" || lower === "+nan") return nan;
  if (/^[+-]?inf(inity)?$/.test(lower)) return { kind: "infinite", negative: lower.startsWith("-") };
  const parts = decimalText.exec(trimmed);
  if (!parts) return null;
  const fraction = parts[3] ?? "";
  return round(finite(parts[1] === "-", BigInt(parts[2]! + fraction), Number(parts[4] ?? 0) - fraction.length));
}

/** A Decimal128's value. */
export function fromDecimal128(value: Decimal128): Dec {
  return parseDecimal(value.toString()) ?? nan;
}

/** An int, a long (exactly) or a double (to 15 significant digits) as a decimal. */
export function fromNumber(value: number | bigint): Dec {
  if (typeof value === "bigint") return finite(value < 0n, value < 0n ? -value : value, 0);
  if (Number.isNaN(value)) return nan;
  if (!Number.isFinite(value)) return { kind: "infinite", negative: value < 0 };
  // An integer within 64 bits is an int or a long as documents hold it (ejson-text.ts): exact.
  if (Number.isInteger(value) && value >= -(2 ** 63) && value < 2 ** 63)
    return finite(value < 0 || Object.is(value, -0), BigInt(Math.abs(value)), 0);
  return parseDecimal(value.toPrecision(15)) ?? nan;
}

/**
 * A double's exact binary value as a decimal, rounded half to even to 34 digits: MongoDB's
 * conversion at full precision (kRoundTo34Digits), which its sums use (0.1 →
 * 0.1000000000000000055511151231257827). Its exact form keeps no trailing zero (2.5 → 25E-1).
 */
export function fromDoubleExact(value: number): Dec {
  if (Number.isNaN(value)) return nan;
  if (!Number.isFinite(value)) return { kind: "infinite", negative: value < 0 };
  const negative = value < 0 || Object.is(value, -0);
  let magnitude = Math.abs(value);
  if (Number.isInteger(magnitude)) return round(finite(negative, BigInt(magnitude), 0));
  // magnitude = m / 2^k for the least k that makes m an integer (each doubling is exact) = m·5^k / 10^k.
  let k = 0;
  while (!Number.isInteger(magnitude)) {
    magnitude *= 2;
    k++;
  }
  return round(finite(negative, BigInt(magnitude) * 5n ** BigInt(k), -k));
}

/** The Decimal128 of a decimal, its digits and exponent as they are. */
export function toDecimal128(value: Dec): Decimal128 {
  return Decimal128.fromString(decimalString(value));
}

/** A decimal as scientific text Decimal128 reads exactly ("110E-2"). */
function decimalString(value: Dec): string {
  if (value.kind === "nan") return "NaN";
  if (value.kind === "infinite") return value.negative ? "-Infinity" : "Infinity";
  return `${value.negative ? "-" : ""}${value.coefficient}E${value.exponent >= 0 ? "+" : ""}${value.exponent}`;
}

/** A decimal's nearest double. */
export function toDouble(value: Dec): number {
  if (value.kind === "nan") return Number.NaN;
  if (value.kind === "infinite") return value.negative ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY;
  return Number(decimalString(value));
}

/** Rounds `coefficient / divisor` half to even; `sticky`: something nonzero was dropped below it. */
function divideHalfEven(coefficient: bigint, divisor: bigint, sticky = false): bigint {
  const quotient = coefficient / divisor;
  const twice = (coefficient % divisor) * 2n;
  if (twice > divisor || (twice === divisor && (sticky || quotient % 2n === 1n))) return quotient + 1n;
  return quotient;
}

/** To 34 digits and decimal128's exponents: rounded, clamped, or infinite. */
function round(value: Dec, sticky = false): Dec {
  if (value.kind !== "finite") return value;
  let { coefficient, exponent } = value;
  const digits = digitsOf(coefficient);
  if (digits > maxDigits) {
    const drop = digits - maxDigits;
    coefficient = divideHalfEven(coefficient, pow10(drop), sticky);
    exponent += drop;
    if (digitsOf(coefficient) > maxDigits) {
      coefficient /= 10n;
      exponent += 1;
    }
  }
  if (exponent < minExponent) {
    coefficient = divideHalfEven(coefficient, pow10(minExponent - exponent), sticky);
    exponent = minExponent;
  }
  if (exponent > maxExponent) {
    if (coefficient === 0n) exponent = maxExponent;
    else if (digitsOf(coefficient) + exponent - maxExponent <= maxDigits) {
      coefficient *= pow10(exponent - maxExponent);
      exponent = maxExponent;
    } else return { kind: "infinite", negative: value.negative };
  }
  return finite(value.negative, coefficient, exponent);
}

export function negate(value: Dec): Dec {
  if (value.kind === "nan") return value;
  return { ...value, negative: !value.negative };
}

export function add(a: Dec, b: Dec): Dec {
  if (a.kind === "nan" || b.kind === "nan") return nan;
  if (a.kind === "infinite") return b.kind === "infinite" && b.negative !== a.negative ? nan : a;
  if (b.kind === "infinite") return b;
  const exponent = Math.min(a.exponent, b.exponent);
  const x = a.coefficient * pow10(a.exponent - exponent) * (a.negative ? -1n : 1n);
  const y = b.coefficient * pow10(b.exponent - exponent) * (b.negative ? -1n : 1n);
  const sum = x + y;
  // An exact zero is +0 (but -0 when both were negative).
  const negative = sum === 0n ? a.negative && b.negative : sum < 0n;
  return round(finite(negative, sum < 0n ? -sum : sum, exponent));
}

export function subtract(a: Dec, b: Dec): Dec {
  return add(a, negate(b));
}

export function multiply(a: Dec, b: Dec): Dec {
  if (a.kind === "nan" || b.kind === "nan") return nan;
  const negative = a.negative !== b.negative;
  if (a.kind === "infinite" || b.kind === "infinite") {
    const other = a.kind === "infinite" ? b : a;
    if (other.kind === "finite" && other.coefficient === 0n) return nan;
    return { kind: "infinite", negative };
  }
  return round(finite(negative, a.coefficient * b.coefficient, a.exponent + b.exponent));
}

/** `a / b`; a zero `b` is the caller's to refuse (MongoDB's "can't $divide by zero"). */
export function divide(a: Dec, b: Dec): Dec {
  if (a.kind === "nan" || b.kind === "nan") return nan;
  const negative = a.negative !== b.negative;
  if (a.kind === "infinite") return b.kind === "infinite" ? nan : { kind: "infinite", negative };
  if (b.kind === "infinite") return finite(negative, 0n, minExponent);
  const preferred = a.exponent - b.exponent;
  if (a.coefficient === 0n) return round(finite(negative, 0n, preferred));
  // Enough digits for 34 and a rounding digit, then the remainder as the sticky part.
  const scale = Math.max(0, maxDigits + 1 + digitsOf(b.coefficient) - digitsOf(a.coefficient));
  const scaled = a.coefficient * pow10(scale);
  let quotient = scaled / b.coefficient;
  const remainder = scaled % b.coefficient;
  let exponent = preferred - scale;
  if (remainder === 0n) {
    // Exact: as close to the preferred exponent as the digits allow.
    while (exponent < preferred && quotient % 10n === 0n) {
      quotient /= 10n;
      exponent += 1;
    }
    return round(finite(negative, quotient, exponent));
  }
  return round(finite(negative, quotient, exponent), true);
}

/** `a` less the whole multiples of `b` (truncated toward zero): IEEE's remainder by truncation. */
export function remainder(a: Dec, b: Dec): Dec {
  if (a.kind === "nan" || b.kind === "nan" || a.kind === "infinite") return nan;
  if (b.kind === "infinite") return a;
  if (b.coefficient === 0n) return nan;
  const exponent = Math.min(a.exponent, b.exponent);
  const x = a.coefficient * pow10(a.exponent - exponent);
  const y = b.coefficient * pow10(b.exponent - exponent);
  return round(finite(a.negative, x % y, exponent));
}

export function isZero(value: Dec): boolean {
  return value.kind === "finite" && value.coefficient === 0n;
}

export type RoundingMode = "halfEven" | "truncate" | "floor" | "ceil";

/**
 * The decimal with no digits below 10^-`places` (`$round`, `$trunc`; `$floor` and `$ceil` at 0
 * places). A value already that coarse is kept as it is.
 */
export function quantize(value: Dec, places: number, mode: RoundingMode): Dec {
  if (value.kind !== "finite" || value.exponent >= -places) return value;
  const divisor = pow10(-places - value.exponent);
  let coefficient: bigint;
  if (mode === "halfEven") coefficient = divideHalfEven(value.coefficient, divisor);
  else {
    coefficient = value.coefficient / divisor;
    const dropped = value.coefficient % divisor !== 0n;
    // Away from zero: floor of a negative value, ceiling of a positive one.
    if (dropped && ((mode === "floor" && value.negative) || (mode === "ceil" && !value.negative))) coefficient += 1n;
  }
  return round(finite(value.negative, coefficient, -places));
}

/** The whole part of a finite decimal, toward zero (`$toInt`, `$toLong`); null for NaN and infinities. */
export function truncatedInteger(value: Dec): bigint | null {
  if (value.kind !== "finite") return null;
  const whole =
    value.exponent >= 0 ? value.coefficient * pow10(value.exponent) : value.coefficient / pow10(-value.exponent);
  return value.negative ? -whole : whole;
}
