import { functionSourceAccepted } from "./function-source.ts";
import { defineControlRoute } from "./route.ts";

export default defineControlRoute("getEmulatorConfig", async (request) => {
  const { options, apps } = request.server.emulator;
  const address = request.server.server.address();
  return {
    host: options.host,
    port: address !== null && typeof address === "object" ? address.port : options.port,
    publicUrl: options.publicUrl,
    dataDir: options.dataDir,
    passwordHashCost: options.passwordHashCost,
    controlTokenRequired: options.controlToken !== null,
    functionSourceAccepted: functionSourceAccepted(options),
    defaultAppId: options.defaultAppId,
    appIds: (await apps.list()).map((a) => a.appId),
    identityProvider: request.server.emulator.identityProvider,
  };
});
