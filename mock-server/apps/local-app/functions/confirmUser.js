// The confirmation function used when `runConfirmationFunction` is on: addresses at the
// example.com test domain that contain "+pending" wait for a manual confirmation, "+reject"
// fails, every other address is confirmed at once.
exports = async ({ token, tokenId, username }) => {
  if (username.includes("+reject")) return { status: "fail" };
  if (username.includes("+pending")) return { status: "pending" };
  return { status: "success" };
};
