/**
 * Wide objects and members of every Extended JSON kind, for the tests of large arguments read in
 * parts (test/data/ejson-in-slices.test.ts) and of wide values walked in slices
 * (test/data/wide-values.test.ts).
 */

/** An object of `n` keys `k0`, `k1`, …, each holding `value(i)`. */
export const wide = (n: number, value: (i: number) => unknown) =>
  Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, value(i)]));

/** Members of every kind the Extended JSON reader turns into something else, and some it leaves alone. */
export const typed = (i: number) => ({
  oid: { $oid: "64b7f0000000000000000000".slice(0, 24 - String(i).length) + String(i) },
  int: { $numberInt: String(i) },
  long: { $numberLong: "9007199254740993" },
  double: { $numberDouble: "1.5" },
  bare: [i, -0, 2.5, 2 ** 40, 2 ** 60],
  date: { $date: { $numberLong: String(1_700_000_000_000 + i) } },
  regex: { $regularExpression: { pattern: "^a", options: "i" } },
  operator: { $regex: "^b", $options: "i" },
  notWrapper: { $and: [{ a: { $exists: false } }], $ref: 1, $oid: null },
  dbRef: { $ref: "c", $id: i, extra: 1 },
  binary: { $binary: { base64: "AAEC", subType: "00" } },
  text: "é😀\u0000",
});
