/// <reference types="vite/client" />

interface ImportMetaEnv {
  readonly VITE_APP_SERVICES_BASE_URL?: string;
  readonly VITE_APP_SERVICES_APP_ID?: string;
  readonly VITE_EMAILJS_ORIGIN?: string;
  readonly VITE_EMAILJS_PUBLIC_KEY?: string;
  readonly VITE_EMAILJS_SERVICE_ID?: string;
  readonly VITE_EMAILJS_CONTACT_TEMPLATE_ID?: string;
  readonly VITE_EMAILJS_NOTE_TEMPLATE_ID?: string;
}

/** The harness's values of the VITE_ variables a build was not given (vite.config.ts `define`). */
declare const __HARNESS_DEFAULTS__: Partial<Record<string, string>>;
