/**
 * Generated account steps — what users and clients do with accounts (linking identities too), and
 * what the control API does to them — and a side that performs them on an emulator (or two
 * instances on one database), for the tests that set the stores against each other and race
 * instances (test/postgres/accounts-agree, account-races and app-deleted).
 */
import fc from "fast-check";
import type { FastifyInstance } from "fastify";
import { base, call, newApp } from "./app.ts";

const emails = ["ada@example.com", "bob@example.com", "ADA@example.com"];
// (Half a surrogate pair in one: both stores read it as U+FFFD, as the service does.)
const passwords = ["correct horse", "12345", "battery staple", "half \ud800 pair"];
const keyNames = ["ci", "ci-2", "ci"];

/** What a step names: an address, a password, one of the run's sessions, mailed tokens or API keys. */
const email = fc.integer({ min: 0, max: emails.length - 1 });
/** Searches of the users by e-mail: a case, a domain, a part, none. */
const searches = ["ada", "ADA@", "@example.com", "b@e", "bob", "x"];
const password = fc.integer({ min: 0, max: passwords.length - 1 });
const slot = fc.integer({ min: 0, max: 5 });
const ofList = fc.oneof({ arbitrary: fc.integer({ min: 0, max: 4 }), weight: 5 }, fc.constant(-1));

export type Step =
  | ["register", number, number]
  | ["confirm", number]
  | ["resend", number]
  | ["sendReset", number]
  | ["reset", number, number]
  | ["login", number, number]
  | ["link", number, number, number]
  | ["anonymous"]
  | ["keyLogin", number]
  | ["refresh", number]
  | ["profile", number]
  | ["logout", number]
  | ["deleteUser", number]
  | ["createKey", number, number]
  | ["listKeys", number]
  | ["keyAction", number, number, "get" | "enable" | "disable" | "delete"]
  | ["customData", number, number]
  | ["whoami", number]
  | ["seedUser", number, number, boolean]
  | ["confirmPending", number]
  | ["findUsers", number]
  | ["disableUser", number, boolean]
  | ["revokeSessions", number]
  | ["removeUser", number]
  | ["advance", number]
  | ["resetClock"];

export const step: fc.Arbitrary<Step> = fc.oneof(
  { arbitrary: fc.tuple(fc.constant("register" as const), email, password), weight: 3 },
  { arbitrary: fc.tuple(fc.constant("confirm" as const), ofList), weight: 3 },
  fc.tuple(fc.constant("resend" as const), email),
  fc.tuple(fc.constant("sendReset" as const), email),
  fc.tuple(fc.constant("reset" as const), ofList, password),
  { arbitrary: fc.tuple(fc.constant("login" as const), email, password), weight: 4 },
  { arbitrary: fc.tuple(fc.constant("link" as const), slot, email, password), weight: 2 },
  { arbitrary: fc.tuple(fc.constant("anonymous" as const)), weight: 2 },
  fc.tuple(fc.constant("keyLogin" as const), ofList),
  { arbitrary: fc.tuple(fc.constant("refresh" as const), slot), weight: 2 },
  { arbitrary: fc.tuple(fc.constant("profile" as const), slot), weight: 2 },
  fc.tuple(fc.constant("logout" as const), slot),
  fc.tuple(fc.constant("deleteUser" as const), slot),
  {
    arbitrary: fc.tuple(fc.constant("createKey" as const), slot, fc.integer({ min: 0, max: keyNames.length - 1 })),
    weight: 2,
  },
  fc.tuple(fc.constant("listKeys" as const), slot),
  {
    arbitrary: fc.tuple(
      fc.constant("keyAction" as const),
      slot,
      ofList,
      fc.constantFrom("get" as const, "enable" as const, "disable" as const, "delete" as const),
    ),
    weight: 2,
  },
  fc.tuple(fc.constant("customData" as const), slot, fc.integer({ min: 0, max: 2 })),
  fc.tuple(fc.constant("whoami" as const), slot),
  { arbitrary: fc.tuple(fc.constant("seedUser" as const), email, password, fc.boolean()), weight: 2 },
  fc.tuple(fc.constant("confirmPending" as const), email),
  fc.tuple(fc.constant("findUsers" as const), fc.integer({ min: 0, max: searches.length - 1 })),
  fc.tuple(fc.constant("disableUser" as const), slot, fc.boolean()),
  fc.tuple(fc.constant("revokeSessions" as const), slot),
  fc.tuple(fc.constant("removeUser" as const), slot),
  // Past an access token's life and a mailed token's; past a refresh token's (60 days).
  fc.tuple(fc.constant("advance" as const), fc.constantFrom(1801, 61 * 24 * 60 * 60)),
  // Back on real time: windows, marks and lifetimes from the clock ahead.
  fc.tuple(fc.constant("resetClock" as const)),
);

export const prelude: Step[] = [["seedUser", 1, 0, true], ["login", 1, 0], ["anonymous"]];

/**
 * The app of every run: e-mail/password with confirmation and reset by mail, API keys, custom user
 * data, and low limits (two sessions a user, four users) so that the counted paths are taken.
 */
export const appConfig = {
  providers: { "local-userpass": { enabled: true, autoConfirm: false }, "api-key": { enabled: true } },
  customUserData: { enabled: true, database: "d", collection: "custom", userIdField: "user_id" },
  functions: {
    setCustomData: {
      source: `exports = (userId, n) => context.services.get("mongodb-atlas").db("d").collection("custom")
        .updateOne({ user_id: userId }, { $set: { n } }, { upsert: true }).then((r) => r.matchedCount);`,
      runAsSystem: true,
    },
    // What a function knows of its caller (its custom data too).
    whoami: { source: "exports = () => context.user;" },
  },
  limits: { sessionsPerUser: 2, users: 4, mailsPerRecipientPerHour: 1000, anonymousUsersPerAddress: 3 },
};

/** Each side's ids, tokens, secrets and times as placeholders in order of first appearance. */
function masker(appId: string) {
  const seen = new Map<string, string>();
  const placeholder = (kind: string, value: string) => {
    let name = seen.get(value);
    if (!name) {
      name = `${kind}${seen.size}`;
      seen.set(value, name);
    }
    return name;
  };
  const claims = (payload: string) => {
    const parsed = JSON.parse(Buffer.from(payload, "base64url").toString()) as Record<string, unknown>;
    const { iat, exp, nbf, ...rest } = parsed as { iat?: number; exp?: number; nbf?: number };
    return JSON.stringify({ ...rest, life: typeof exp === "number" && typeof iat === "number" ? exp - iat : exp, nbf });
  };
  const mask = (text: string): string =>
    text
      .replaceAll(appId, "APP")
      .replace(/eyJ[\w-]*\.(eyJ[\w-]*)\.[\w-]+/g, (_jwt, payload: string) => `jwt(${mask(claims(payload))})`)
      .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, "TIME")
      .replace(/"nowMs":\d+/g, '"nowMs":"TIME"')
      .replace(/"m-\d+"/g, (id) => placeholder("mail", id))
      .replace(/\b[0-9a-f]{24}(-[a-z]+)?\b/g, (id) => placeholder("id", id))
      .replace(/\b[\w-]{32,}\b/g, (secret) => placeholder("secret", secret));
  return mask;
}

interface Session {
  access?: string;
  refresh?: string;
}
interface Key {
  id: string;
  key?: string;
}

/**
 * One side: an emulator (and, on PostgreSQL, another instance taking every other request, unless a
 * step names the instance it goes to).
 */
export async function side(app: FastifyInstance, also?: FastifyInstance) {
  const appId = await newApp(app, appConfig);
  const mask = masker(appId);
  const sessions: Session[] = [];
  const keys: Key[] = [];
  let sent = 0;
  type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  const sendTo = async (to: FastifyInstance, operationId: string, method: Method, url: string, extra = {}) => {
    const { response, body } = await call(to, operationId, { method, url, ...extra });
    return { status: response.statusCode, body, text: mask(response.body.replace(/"link":"[^"]*"/g, "")) };
  };
  type Send = (operationId: string, method: Method, url: string, extra?: object) => ReturnType<typeof sendTo>;
  const inTurn: Send = (operationId, method, url, extra = {}) =>
    sendTo(also && ++sent % 2 === 0 ? also : app, operationId, method, url, extra);
  const userpass = (path: string) => `${base}/app/${appId}/auth/providers/local-userpass/${path}`;
  const bearer = (token: string | undefined) => ({ headers: { authorization: `Bearer ${token ?? "none"}` } });
  const at = <T>(list: T[], index: number) => (list.length === 0 ? undefined : list[index % list.length]);
  const session = (index: number) => at(sessions, index) ?? {};
  /** The user a session was made for (its refresh token's subject), or one no app has. */
  const userOf = ({ refresh }: Session) =>
    refresh ? JSON.parse(Buffer.from(refresh.split(".")[1]!, "base64url").toString()).sub : "65a1b2c3d4e5f60718293a4e";
  /** A mailed token of a kind, or (index -1, or none mailed) one no mail carried. */
  const mailedBy = (send: Send) => async (kind: "confirm" | "reset", index: number) => {
    const { body } = await send("listAuthTokens", "GET", `/_mock/v1/apps/${appId}/auth/tokens?kind=${kind}`);
    const tokens = (body.tokens ?? []) as { token: string; tokenId: string }[];
    return (index >= 0 && at(tokens, index)) || { token: "0".repeat(64), tokenId: "65a1b2c3d4e5f60718293a4d" };
  };
  const signedIn = (answer: Awaited<ReturnType<Send>>) => {
    if (answer.status === 200) sessions.push({ access: answer.body.access_token, refresh: answer.body.refresh_token });
    return answer;
  };

  async function perform(s: Step, to?: FastifyInstance) {
    const send: Send = to
      ? (operationId, method, url, extra = {}) => sendTo(to, operationId, method, url, extra)
      : inTurn;
    const mailed = mailedBy(send);
    switch (s[0]) {
      case "register":
        return send("registerUser", "POST", userpass("register"), {
          payload: { email: emails[s[1]], password: passwords[s[2]] },
        });
      case "confirm":
        return send("confirmUser", "POST", userpass("confirm"), { payload: await mailed("confirm", s[1]) });
      case "resend":
        return send("resendConfirmationEmail", "POST", userpass("confirm/send"), { payload: { email: emails[s[1]] } });
      case "sendReset":
        return send("sendResetPasswordEmail", "POST", userpass("reset/send"), { payload: { email: emails[s[1]] } });
      case "reset":
        return send("resetPassword", "POST", userpass("reset"), {
          payload: { ...(await mailed("reset", s[1])), password: passwords[s[2]] },
        });
      case "login":
        return signedIn(
          await send("login", "POST", userpass("login"), {
            payload: { username: emails[s[1]], password: passwords[s[2]] },
          }),
        );
      case "link": {
        // An e-mail/password identity linked to a session's user (its access token comes back).
        const own = session(s[1]);
        const answer = await send("login", "POST", `${userpass("login")}?link=true`, {
          ...bearer(own.access),
          payload: { username: emails[s[2]], password: passwords[s[3]] },
        });
        if (answer.status === 200) own.access = answer.body.access_token;
        return answer;
      }
      case "anonymous":
        return signedIn(
          await send("login", "POST", `${base}/app/${appId}/auth/providers/anon-user/login`, { payload: {} }),
        );
      case "keyLogin":
        return signedIn(
          await send("login", "POST", `${base}/app/${appId}/auth/providers/api-key/login`, {
            payload: { key: (s[1] >= 0 && at(keys, s[1])?.key) || "no-such-key" },
          }),
        );
      case "refresh": {
        const own = session(s[1]);
        const answer = await send("refreshAccessToken", "POST", `${base}/auth/session`, bearer(own.refresh));
        if (answer.status === 201) own.access = answer.body.access_token;
        return answer;
      }
      case "profile":
        return send("getProfile", "GET", `${base}/auth/profile`, bearer(session(s[1]).access));
      case "logout":
        return send("logOut", "DELETE", `${base}/auth/session`, bearer(session(s[1]).refresh));
      case "deleteUser":
        return send("deleteUser", "DELETE", `${base}/auth/delete`, bearer(session(s[1]).access));
      case "createKey": {
        const answer = await send("createApiKey", "POST", `${base}/auth/api_keys`, {
          ...bearer(session(s[1]).refresh),
          payload: { name: keyNames[s[2]] },
        });
        if (answer.status === 201) keys.push({ id: answer.body._id, key: answer.body.key });
        return answer;
      }
      case "listKeys":
        return send("listApiKeys", "GET", `${base}/auth/api_keys`, bearer(session(s[1]).refresh));
      case "keyAction": {
        const id = (s[2] >= 0 && at(keys, s[2])?.id) || "65a1b2c3d4e5f60718293a4d";
        const [operationId, method, suffix] = {
          get: ["getApiKey", "GET", ""],
          enable: ["enableApiKey", "PUT", "/enable"],
          disable: ["disableApiKey", "PUT", "/disable"],
          delete: ["deleteApiKey", "DELETE", ""],
        }[s[3]] as [string, "GET" | "PUT" | "DELETE", string];
        return send(operationId, method, `${base}/auth/api_keys/${id}${suffix}`, bearer(session(s[1]).refresh));
      }
      case "customData": {
        const own = session(s[1]);
        return send("callFunction", "POST", `${base}/app/${appId}/functions/call`, {
          ...bearer(own.access),
          payload: { name: "setCustomData", arguments: [userOf(own), s[2]] },
        });
      }
      case "whoami":
        return send("callFunction", "POST", `${base}/app/${appId}/functions/call`, {
          ...bearer(session(s[1]).access),
          payload: { name: "whoami", arguments: [] },
        });
      case "disableUser":
        return send("updateUser", "PATCH", `/_mock/v1/apps/${appId}/users/${userOf(session(s[1]))}`, {
          payload: { disabled: s[2] },
        });
      case "revokeSessions":
        return send("revokeUserSessions", "DELETE", `/_mock/v1/apps/${appId}/users/${userOf(session(s[1]))}/sessions`);
      case "removeUser":
        return send("removeUser", "DELETE", `/_mock/v1/apps/${appId}/users/${userOf(session(s[1]))}`);
      case "advance":
      case "resetClock": {
        // (An app's clock is each instance's own: a test moves it on every one.)
        const instances = also ? [app, also] : [app];
        const url = `/_mock/v1/apps/${appId}/clock`;
        const [answer] = await Promise.all(
          instances.map((to) =>
            s[0] === "advance"
              ? sendTo(to, "advanceClock", "POST", url, { payload: { advanceBy: s[1] } })
              : sendTo(to, "resetClock", "DELETE", url),
          ),
        );
        return answer!;
      }
      case "seedUser":
        return send("createUser", "POST", `/_mock/v1/apps/${appId}/users`, {
          payload: { email: emails[s[1]], password: passwords[s[2]], confirmed: s[3] },
        });
      case "confirmPending": {
        const { body } = await send("listUsers", "GET", `/_mock/v1/apps/${appId}/users`);
        const user = ((body.users ?? []) as { id: string; email?: string }[]).find(
          (u) => u.email?.toLowerCase() === emails[s[1]]!.toLowerCase(),
        );
        return send("confirmPendingUser", "POST", `/_mock/v1/apps/${appId}/users/${user?.id ?? "nobody"}/confirm`);
      }
      case "findUsers": {
        const answer = await send("listUsers", "GET", `/_mock/v1/apps/${appId}/users?email=${searches[s[1]]}`);
        // Who was found, not in which order (two users of one millisecond have none).
        const found = ((answer.body.users ?? []) as { email?: string; status: string; identities: unknown[] }[])
          .map((u) => `${u.email} ${u.status} ${u.identities.length}`)
          .sort();
        return { ...answer, text: JSON.stringify({ total: answer.body.total, found }) };
      }
    }
  }

  /** What the app holds: its users (identities, sessions, keys), its tokens and the mail it sent. */
  async function held() {
    const { body } = await call(app, "listUsers", { method: "GET", url: `/_mock/v1/apps/${appId}/users` });
    // Oldest first, but two users made in one millisecond (more often in memory) have no order.
    const unmasked = (user: unknown) => JSON.stringify(user).replace(/"[\w:.-]{24,}"/g, "");
    const users = (body.users as unknown[])
      .sort((a, b) => unmasked(a).localeCompare(unmasked(b)))
      .map((user) => mask(JSON.stringify(user)))
      .sort();
    const tokens = await inTurn("listAuthTokens", "GET", `/_mock/v1/apps/${appId}/auth/tokens`);
    const mail = await inTurn("listMail", "GET", `/_mock/v1/mail?appId=${appId}`);
    return { users, tokens: tokens.text, mail: mail.text };
  }

  return {
    appId,
    /** Performs a step (on `to`, or the instance whose turn it is): its status and masked body. */
    perform: async (s: Step, to?: FastifyInstance) => {
      const { status, text } = await perform(s, to);
      return { status, text };
    },
    held,
  };
}
