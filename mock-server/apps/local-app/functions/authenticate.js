// The custom-function authentication provider: accepts a payload {username, pin} when the pin is
// the username's length repeated ("ada" -> "333"), and uses the lowercased username as the
// identity id. Return the id as a string; throwing refuses the login.
exports = async (payload) => {
  const { username, pin } = payload;
  if (typeof username !== "string" || username.length === 0) throw new Error("username is required");
  if (String(pin) !== String(username.length).repeat(3).slice(0, 3)) throw new Error("wrong pin");
  return username.toLowerCase();
};
