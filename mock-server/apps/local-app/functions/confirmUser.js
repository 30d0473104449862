// The confirmation function used when `runConfirmationFunction` is on: an address containing
// "+pending" waits (the app confirms it later with the token), one containing "+reject" is refused,
// every other address is confirmed at once.
exports = async ({ token, tokenId, username }) => {
  if (username.includes("+reject")) return { status: "fail" };
  if (username.includes("+pending")) return { status: "pending" };
  return { status: "success" };
};
