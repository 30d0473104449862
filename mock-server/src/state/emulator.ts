/**
 * Everything the emulator holds, with no HTTP in sight: the apps, the outbox, the live events and
 * the token key. `app.ts` puts HTTP in front of it; tests can drive it directly.
 */

import { readFileSync } from "node:fs";
import { deepMerge } from "../config/app-config.ts";
import { loadAppFolder } from "../config/app-folder.ts";
import type { EmulatorOptions } from "../config/options.ts";
import { FunctionFolders } from "../functions/function-folder.ts";
import { AppRegistry } from "./apps.ts";
import { type CreateEmailJsAccountRequest, EmailJsAccounts } from "./emailjs-accounts.ts";
import { EventBus } from "./events.ts";
import { randomHex } from "./ids.ts";
import { Hs256Key } from "./jwt.ts";
import { type MailMessage, MailOutbox } from "./mail.ts";
import { SmtpRelay } from "./smtp-relay.ts";

export class Emulator {
  readonly startedAt = Date.now();
  readonly events = new EventBus();
  readonly mail: MailOutbox;
  readonly apps: AppRegistry;
  readonly functionFolders: FunctionFolders;
  readonly emailjs: EmailJsAccounts;
  /** Delivers captured mail over SMTP when `--smtp` is set. */
  readonly smtp: SmtpRelay | null;
  private key: Hs256Key;
  private secret: string;

  constructor(readonly options: EmulatorOptions) {
    this.secret = options.signingSecret ?? randomHex(32);
    this.key = new Hs256Key(this.secret);
    const mailEvent = (message: MailMessage, action: string) =>
      this.events.emit({
        type: "mail",
        action,
        id: message.id,
        ...(message.appId ? { appId: message.appId } : {}),
        ...(message.account ? { account: message.account } : {}),
        ...(message.delivery ? { detail: { delivery: message.delivery.state } } : {}),
      });
    this.mail = new MailOutbox(50_000, (message) => {
      this.smtp?.enqueue(message);
      mailEvent(message, "captured");
    });
    this.smtp = options.smtpUrl
      ? new SmtpRelay(this.mail, {
          url: options.smtpUrl,
          ...options.smtpRetry,
          onChange: (message) => mailEvent(message, `delivery-${message.delivery?.state}`),
          ...(options.logLevel === "silent"
            ? {}
            : { log: (line, fields) => process.stderr.write(`${JSON.stringify({ msg: line, ...fields })}\n`) }),
        })
      : null;
    const folder = loadAppFolder(options.defaultAppDir);
    if (options.webUrl) {
      const web = options.webUrl.replace(/\/+$/, "");
      folder.config = deepMerge(folder.config, {
        providers: {
          "local-userpass": { emailConfirmationUrl: `${web}/confirm`, resetPasswordUrl: `${web}/reset-password` },
        },
      });
    }
    this.functionFolders = new FunctionFolders(options.watchFunctions);
    this.apps = new AppRegistry(this.mail, this.events, this.functionFolders, {
      config: folder.config,
      appDir: options.defaultAppDir,
    });
    this.apps.create({ appId: options.defaultAppId });
    // New EmailJS accounts copy the default account's services and templates.
    const defaults = JSON.parse(readFileSync(options.emailjsDefaultsFile, "utf8")) as CreateEmailJsAccountRequest;
    this.emailjs = new EmailJsAccounts(defaults);
    this.emailjs.create(defaults);
    for (const dir of options.appDirs) {
      const loaded = loadAppFolder(dir);
      this.apps.create({ appId: loaded.appId ?? undefined, template: { config: loaded.config, appDir: dir } });
    }
  }

  /** The HS256 key of access and refresh tokens. */
  get tokenKey(): Hs256Key {
    return this.key;
  }

  get signingSecret(): string {
    return this.secret;
  }

  /** Stops watching app folders (on shutdown). */
  close(): void {
    void this.smtp?.close();
    this.functionFolders.close();
    for (const app of this.apps.list()) app.close();
  }

  /** Replaces the token secret (state import), so imported sessions keep working. */
  setSigningSecret(secret: string): void {
    this.secret = secret;
    this.key = new Hs256Key(secret);
  }
}
