// Adds its numeric arguments: sum(1, 2, 3.5) === 6.5.
exports = (...numbers) =>
  numbers.reduce((total, n) => {
    if (typeof n !== "number" || Number.isNaN(n)) throw new Error(`sum: ${JSON.stringify(n)} is not a number`);
    return total + n;
  }, 0);
