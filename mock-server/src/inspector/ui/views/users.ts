/** An app's users: status, identities, sessions and API keys; pending registrations can be confirmed. */
import { client, unwrap } from "../api.ts";
import { h, table, time } from "../dom.ts";
import { action } from "../view.ts";

export async function usersPanel(appId: string, refresh: () => void): Promise<Node> {
  const { users } = await unwrap(client.GET("/_mock/v1/apps/{appId}/users", { params: { path: { appId } } }));
  const confirm = (userId: string, email: string) =>
    action(async () => {
      await unwrap(
        client.POST("/_mock/v1/apps/{appId}/users/{userId}/confirm", { params: { path: { appId, userId } } }),
      );
      return `Confirmed ${email}.`;
    }, refresh);
  return table(
    `${users.length} user${users.length === 1 ? "" : "s"}`,
    ["User", "Status", "Identities", "Sessions", "API keys", "Actions"],
    users.map((user) => [
      [
        h("strong", null, user.email ?? "(no e-mail)"),
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
            user.identities.map((i) => h("li", null, i.provider_type)),
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
            user.apiKeys.map((k) => h("li", null, k.name, k.disabled ? " (disabled)" : "")),
          )
        : "none",
      user.status === "pending"
        ? h(
            "button",
            {
              type: "button",
              "data-key": `confirm-${user.id}`,
              onclick: confirm(user.id, user.email ?? user.id),
              "aria-label": `Confirm ${user.email ?? user.id}`,
            },
            "Confirm",
          )
        : null,
    ]),
    "No users yet.",
  );
}
