import { checkEmail, checkPassword, hash } from "../app-services/auth/userpass.ts";
import { AppServicesError, controlErrors } from "../errors/catalogue.ts";
import { fireAuthTriggers } from "../runtime/auth-triggers.ts";
import { newObjectIdHex } from "../state/ids.ts";
import { trustedLane } from "../state/password-work.ts";
import { appOf, defineControlRoute } from "./route.ts";
import { registrationView, userView } from "./views.ts";

/** Seeds an e-mail/password user; a confirmed one gets its user object at once (like an admin-created user). */
export default defineControlRoute("createUser", async (request, reply) => {
  const { emulator } = request.server;
  const app = await appOf(request);
  const { email, password } = request.body;
  const confirmed = request.body.confirmed ?? true;
  try {
    checkEmail(email);
    checkPassword(password);
  } catch (error) {
    throw controlErrors.validation(error instanceof AppServicesError ? error.message : String(error));
  }
  const passwordHash = await hash(emulator, trustedLane, "held", password);
  const now = app.clock.now();
  const account = {
    id: newObjectIdHex(),
    email,
    passwordHash,
    confirmed,
    userId: null as string | null,
    createdAt: now,
  };
  if (!(await app.withRoomForUsers(() => app.users.addAccount(account))))
    throw controlErrors.conflict(`the e-mail '${email}' is registered`);
  if (!confirmed) return reply.code(201).send(registrationView(account));
  const claim = await app.withRoomForUsers(() =>
    app.users.create(
      {
        id: newObjectIdHex(),
        type: "normal",
        disabled: false,
        createdAt: now,
        identities: [
          { id: account.id, provider_type: "local-userpass", provider_id: app.providerId("local-userpass") },
        ],
        data: { email },
      },
      { accountId: account.id, passwordHash },
    ),
  );
  // Removed (an app reset, say) between the two steps: nothing of it is left, and the caller is told.
  if ("registrationGone" in claim)
    throw controlErrors.conflict(`the registration of '${email}' was removed while its user was made`);
  const user = claim.ok ? claim.user : claim.owner;
  emulator.events.emit({ type: "user", appId: app.appId, action: "created", id: user.id });
  if (claim.ok) fireAuthTriggers(app, "CREATE", user, ["local-userpass"], request.log);
  return reply.code(201).send(await userView(app, user));
});
