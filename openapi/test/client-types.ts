/**
 * Compile-time checks (run by `npm run typecheck`): the generated clients reject wrongly typed
 * request bodies and parameters. Each `@ts-expect-error` fails the typecheck if the error vanishes.
 */
import { createAppServicesClient } from "../src/create-app-services-client.ts";
import { createMockControlClient } from "../src/create-mock-control-client.ts";

const client = createAppServicesClient({ baseUrl: "http://127.0.0.1:4000" });
const control = createMockControlClient({ baseUrl: "http://127.0.0.1:4000" });

export async function typeChecks() {
  await client.POST("/api/client/v2.0/app/{appId}/auth/providers/local-userpass/register", {
    params: { path: { appId: "a" } },
    body: { email: "ada@example.com", password: "secret1" },
  });
  await client.POST("/api/client/v2.0/app/{appId}/auth/providers/local-userpass/register", {
    params: { path: { appId: "a" } },
    // @ts-expect-error password must be a string
    body: { email: "ada@example.com", password: 123456 },
  });
  await client.POST("/api/client/v2.0/app/{appId}/auth/providers/local-userpass/confirm", {
    params: { path: { appId: "a" } },
    // @ts-expect-error tokenId is required
    body: { token: "t" },
  });
  const { data } = await client.GET("/api/client/v2.0/auth/profile");
  // @ts-expect-error the profile has no `email` at top level (it is in `data`)
  data?.email;
  await control.POST("/_mock/v1/apps/{appId}/clock", {
    params: { path: { appId: "a" } },
    // @ts-expect-error advanceBy is a number of seconds
    body: { advanceBy: "1h" },
  });
}
