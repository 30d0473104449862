/** Where the e2e stack listens (uncommon ports, so a running `npm start` does not collide). */
export const emulatorPort = Number(process.env.E2E_EMULATOR_PORT ?? 4310);
export const webPort = Number(process.env.E2E_WEB_PORT ?? 4311);
export const emulatorUrl = `http://127.0.0.1:${emulatorPort}`;
export const webUrl = `http://127.0.0.1:${webPort}`;

/**
 * Every variable of the web app's configuration (web/src/config/env.ts), for the suite's emulator.
 * The suite builds the app with these and gives them to every page at run time too, so neither an
 * earlier build, a `web/.env*` file nor the shell's VITE_ variables can point a test elsewhere.
 */
export const suiteWebConfig: Record<string, string> = {
  VITE_APP_SERVICES_BASE_URL: emulatorUrl,
  VITE_APP_SERVICES_APP_ID: "local-app",
  VITE_EMAILJS_ORIGIN: emulatorUrl,
  VITE_EMAILJS_PUBLIC_KEY: "local-public-key",
  VITE_EMAILJS_SERVICE_ID: "local_service",
  VITE_EMAILJS_CONTACT_TEMPLATE_ID: "contact_form",
  VITE_EMAILJS_NOTE_TEMPLATE_ID: "note_email",
  VITE_AUTH_CONFIRMATION: "email",
  VITE_AUTH_RESET: "email",
  VITE_AUTH_PROVIDERS: "google,apple,facebook",
};
