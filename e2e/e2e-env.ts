/** Where the e2e stack listens (uncommon ports, so a running `npm start` does not collide). */
export const emulatorPort = Number(process.env.E2E_EMULATOR_PORT ?? 4310);
export const webPort = Number(process.env.E2E_WEB_PORT ?? 4311);
export const emulatorUrl = `http://127.0.0.1:${emulatorPort}`;
export const webUrl = `http://127.0.0.1:${webPort}`;
