/**
 * The query's bit tests — `$bitsAllSet`, `$bitsAllClear`, `$bitsAnySet`, `$bitsAnyClear` — as
 * MongoDB's `BitTestMatchExpression` runs them. The mask is a non-negative whole number, a BinData
 * (its bytes little-endian) or a list of bit positions, refused otherwise with MongoDB's texts. A
 * value is tested when it is a whole number within 64 bits (of any type, in two's complement: a
 * negative number's bits past the 64th are set) or a BinData (bits past its end clear); anything
 * else — a fraction, NaN, a string, a boolean, a date — never matches. mingo's took fractions and
 * strings as numbers, wrapped positions past 31, read negative numbers as 32 bits and accepted any
 * mask.
 */
import type { Binary } from "bson";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { truncatedInteger } from "./decimal.ts";
import { decOf, isDecimal, isLong, isNumeric } from "./numeric-operators.ts";
import { somePathValue } from "./path-walk.ts";
import { shellText } from "./shell-text.ts";

type BitTest = "$bitsAllSet" | "$bitsAllClear" | "$bitsAnySet" | "$bitsAnyClear";

const isBinary = (value: unknown): value is Binary =>
  value !== null && typeof value === "object" && (value as { _bsontype?: unknown })._bsontype === "Binary";

const int64Min = -(2n ** 63n);
const int64Max = 2n ** 63n - 1n;

/** A number as a 64-bit integer, exactly; null for a fraction, NaN, an infinity or past 64 bits. */
function wholeNumber(value: unknown): bigint | null {
  let n: bigint | null;
  if (typeof value === "number") n = Number.isInteger(value) ? BigInt(value) : null;
  else if (isLong(value)) n = BigInt(String(value));
  else if (isDecimal(value)) {
    const dec = decOf(value);
    const whole = dec.kind === "finite" && (dec.exponent >= 0 || dec.coefficient % 10n ** BigInt(-dec.exponent) === 0n);
    n = whole ? truncatedInteger(dec) : null;
  } else n = null;
  return n !== null && n >= int64Min && n <= int64Max ? n : null;
}

/** The mask's argument read as MongoDB's parser reads it: its set bit positions. */
function maskPositions(name: BitTest, mask: unknown): number[] {
  const shown = () => `${name}: ${shellText(mask)}`;
  if (Array.isArray(mask)) {
    return mask.map((position, index) => {
      // (MongoDB names the list's element by its index.)
      const element = `${index}: ${shellText(position)}`;
      if (!isNumeric(position)) throw errors.mongo(`Failed to parse bit position. Expected a number in: ${element}`);
      if (Number.isNaN(Number(String(position))))
        throw errors.mongo(`Failed to parse bit position. Expected an integer, but found NaN in: ${element}`);
      const n = wholeNumber(position);
      if (n === null) throw errors.mongo(`Failed to parse bit position. Expected an integer: ${element}`);
      if (n > 2n ** 31n - 1n || n < -(2n ** 31n))
        throw errors.mongo(`Failed to parse bit position. Cannot represent as a 32-bit integer: ${element}`);
      if (n < 0n) throw errors.mongo(`Failed to parse bit position. Expected a non-negative number in: ${element}`);
      return Number(n);
    });
  }
  if (isNumeric(mask)) {
    if (Number.isNaN(Number(String(mask)))) throw errors.mongo(`Expected an integer, but found NaN in: ${shown()}`);
    const n = wholeNumber(mask);
    if (n === null) {
      const big = Number(String(mask));
      if (Number.isFinite(big) && (big >= 2 ** 63 || big < -(2 ** 63)))
        throw errors.mongo(`Cannot represent as a 64-bit integer: ${shown()}`);
      throw errors.mongo(`Expected an integer: ${shown()}`);
    }
    if (n < 0n) throw errors.mongo(`Expected a non-negative number in: ${shown()}`);
    const positions: number[] = [];
    for (let bit = 0; bit < 63; bit++) if ((n >> BigInt(bit)) & 1n) positions.push(bit);
    return positions;
  }
  if (isBinary(mask)) return binaryPositions(mask.buffer);
  throw errors.mongo(`${name} takes an Array, a number, or a BinData but received: ${shown()}`);
}

function binaryPositions(bytes: Uint8Array): number[] {
  const positions: number[] = [];
  bytes.forEach((byte, i) => {
    for (let bit = 0; bit < 8; bit++) if (byte & (1 << bit)) positions.push(i * 8 + bit);
  });
  return positions;
}

/** Whether bit `position` of a tested value is set; null when the value is not tested. */
function bitReader(value: unknown): ((position: number) => boolean) | null {
  if (isBinary(value)) {
    const bytes = value.buffer;
    return (position) => position < bytes.length * 8 && (bytes[position >> 3]! & (1 << (position & 7))) !== 0;
  }
  if (!isNumeric(value)) return null;
  const n = wholeNumber(value);
  if (n === null) return null;
  const bits = BigInt.asUintN(64, n);
  return (position) => (position >= 64 ? n < 0n : ((bits >> BigInt(position)) & 1n) === 1n);
}

/** A bit test's query operator (the engine's signature: the path, then the mask). */
function bitTest(name: BitTest) {
  return (selector: string, mask: unknown) => {
    const positions = maskPositions(name, mask);
    const parts = selector.split(".");
    return (doc: unknown): boolean =>
      somePathValue(doc, parts, (value) => {
        const bit = bitReader(value);
        if (bit === null) return false;
        switch (name) {
          case "$bitsAllSet":
            return positions.every(bit);
          case "$bitsAllClear":
            return positions.every((position) => !bit(position));
          case "$bitsAnySet":
            return positions.some(bit);
          case "$bitsAnyClear":
            return positions.some((position) => !bit(position));
        }
      });
  };
}

export const bitQueryOperators = {
  $bitsAllSet: bitTest("$bitsAllSet"),
  $bitsAllClear: bitTest("$bitsAllClear"),
  $bitsAnySet: bitTest("$bitsAnySet"),
  $bitsAnyClear: bitTest("$bitsAnyClear"),
};
