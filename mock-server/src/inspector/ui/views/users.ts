/**
 * An app's users: status, identities, sessions and API keys (with their state); a search by e-mail;
 * a new e-mail/password user; per user: confirm (pending), disable or enable, revoke sessions, delete.
 */
import { client, type Schemas, unwrap } from "../api.ts";
import { h, table, time } from "../dom.ts";
import { action, confirmDialog, searchForm, withQuery } from "../view.ts";

type User = Schemas["User"];

/** The users a page shows: the newest, as a production app may have a hundred thousand. */
const shownUsers = 200;

function createForm(appId: string, refresh: () => void): HTMLElement {
  const onCreate = action(async () => {
    const form = document.getElementById("user-form") as HTMLFormElement;
    const data = new FormData(form);
    const email = String(data.get("email") ?? "").trim();
    const user = await unwrap(
      client.POST("/_mock/v1/apps/{appId}/users", {
        params: { path: { appId } },
        body: { email, password: String(data.get("password") ?? ""), confirmed: data.get("confirmed") === "on" },
      }),
    );
    form.reset();
    return `Created ${user.email ?? email} (${user.status}).`;
  }, refresh);
  return h(
    "form",
    { id: "user-form", class: "inline", "aria-label": "Create an e-mail/password user", onsubmit: onCreate },
    h(
      "label",
      null,
      "E-mail",
      h("input", { name: "email", type: "email", required: true, autocomplete: "off", "data-key": "user-email" }),
    ),
    h(
      "label",
      null,
      "Password (6–128 characters)",
      h("input", {
        name: "password",
        type: "password",
        required: true,
        minlength: 6,
        maxlength: 128,
        autocomplete: "new-password",
        "data-key": "user-password",
      }),
    ),
    h("label", { class: "check" }, h("input", { name: "confirmed", type: "checkbox", checked: true }), "Confirmed"),
    h("button", { type: "submit" }, "Create user"),
  );
}

function actions(appId: string, user: User, refresh: () => void): Node[] {
  const name = user.email ?? user.id;
  const path = { params: { path: { appId, userId: user.id } } };
  const button = (text: string, label: string, onclick: (event: Event) => void, danger = false) =>
    h("button", { type: "button", class: danger ? "danger" : null, onclick, "aria-label": label }, text);
  const buttons: Node[] = [];
  if (user.status === "pending") {
    buttons.push(
      button(
        "Confirm",
        `Confirm ${name}`,
        action(async () => {
          await unwrap(client.POST("/_mock/v1/apps/{appId}/users/{userId}/confirm", path));
          return `Confirmed ${name}.`;
        }, refresh),
      ),
    );
  }
  if (user.status === "active") {
    const disabled = !user.disabled;
    buttons.push(
      button(
        user.disabled ? "Enable" : "Disable",
        `${user.disabled ? "Enable" : "Disable"} ${name}`,
        action(async () => {
          await unwrap(client.PATCH("/_mock/v1/apps/{appId}/users/{userId}", { ...path, body: { disabled } }));
          return `${disabled ? "Disabled" : "Enabled"} ${name}.`;
        }, refresh),
      ),
    );
  }
  if (user.sessions.length > 0) {
    buttons.push(
      button(
        "Revoke sessions",
        `Revoke the sessions of ${name}`,
        action(async () => {
          const { response } = await client.DELETE("/_mock/v1/apps/{appId}/users/{userId}/sessions", path);
          if (!response.ok) throw new Error(`${response.status} ${response.statusText}`);
          return `Revoked the sessions of ${name}.`;
        }, refresh),
      ),
    );
  }
  const remove = async (event: Event) => {
    const question = `Delete ${name}? Its identities, sessions and API keys are deleted too.`;
    if (!(await confirmDialog(question, "Delete user"))) return;
    await action(async () => {
      const { response } = await client.DELETE("/_mock/v1/apps/{appId}/users/{userId}", path);
      if (!response.ok) throw new Error(`${response.status} ${response.statusText}`);
      return `Deleted ${name}.`;
    }, refresh)(event);
  };
  buttons.push(button("Delete…", `Delete ${name}`, remove, true));
  return buttons;
}

/** The users tab under `base` (`#/apps/x/users`); `email` is its search (none: all users). */
export async function usersPanel(appId: string, base: string, email: string, refresh: () => void): Promise<Node> {
  const { users, total } = await unwrap(
    client.GET("/_mock/v1/apps/{appId}/users", {
      params: { path: { appId }, query: { limit: shownUsers, ...(email ? { email } : {}) } },
    }),
  );
  const count = (n: number) => `${n.toLocaleString("en")} ${email ? "matching " : ""}user${n === 1 ? "" : "s"}`;
  return h(
    "div",
    null,
    searchForm({
      id: "user-search",
      label: "E-mail contains",
      name: "Find users",
      button: "Find",
      value: email,
      list: (text) => withQuery(base, { email: text }),
      refresh,
      maxLength: 320,
    }),
    createForm(appId, refresh),
    table(
      total > users.length ? `The newest ${count(users.length)} of ${total.toLocaleString("en")}` : count(users.length),
      ["User", "Status", "Identities", "Sessions", "API keys", "Actions"],
      users.map((user) => [
        [
          h("strong", null, user.email ?? "(no e-mail)"),
          user.name ? [h("br"), user.name] : null,
          h("br"),
          h("small", null, user.id),
          user.disabled ? [h("br"), h("span", { class: "status-err" }, "disabled")] : null,
        ],
        [
          h("span", { class: user.status === "pending" ? "pending" : null }, user.status),
          h("br"),
          h("small", null, user.type),
        ],
        user.identities.length > 0
          ? h(
              "ul",
              null,
              // The provider and the identity's id there (an OAuth 2.0 provider's subject, a custom token's `sub`).
              user.identities.map((i) =>
                h(
                  "li",
                  null,
                  i.provider_type,
                  i.provider_type === "anon-user" ? null : [h("br"), h("small", null, i.id)],
                ),
              ),
            )
          : "—",
        user.sessions.length > 0
          ? h(
              "ul",
              null,
              user.sessions.map((s) => h("li", null, `${s.providerType} · `, time(s.createdAt))),
            )
          : "none",
        user.apiKeys.length > 0
          ? h(
              "ul",
              null,
              user.apiKeys.map((k) =>
                h(
                  "li",
                  null,
                  k.name,
                  " ",
                  h("span", { class: k.disabled ? "status-err" : "status-ok" }, k.disabled ? "disabled" : "enabled"),
                ),
              ),
            )
          : "none",
        h("div", { class: "actions row-actions" }, actions(appId, user, refresh)),
      ]),
      email ? "No user's e-mail contains this." : "No users yet.",
    ),
  );
}
