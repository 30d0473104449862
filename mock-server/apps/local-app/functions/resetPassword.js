// The reset function used when `runResetFunction` is on: the caller passes a security answer as
// the extra argument; "blue" resets at once, "later" leaves the reset pending, anything else fails.
exports = ({ token, tokenId, username, password, currentPasswordValid }, securityAnswer) => {
  if (securityAnswer === "blue") return { status: "success" };
  if (securityAnswer === "later") return { status: "pending" };
  return { status: "fail" };
};
