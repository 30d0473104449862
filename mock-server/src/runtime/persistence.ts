/**
 * Whole-state export and import (the control document's State), and `--data-dir` persistence:
 * loaded at start, saved periodically (when it changed) and at shutdown, always by writing a
 * temporary file, syncing it and renaming it over the previous one, so a crash at any moment
 * leaves either the old or the new state on disk, never a torn file. A save never holds the event
 * loop for long: the state is taken at one moment (documents shared, not copied), then serialized
 * in slices of a few milliseconds, reusing the text of collections that did not change, and
 * written, synced and renamed on libuv's threads.
 */

import { createHash } from "node:crypto";
import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from "node:fs";
import { open, rename } from "node:fs/promises";
import { dirname, join } from "node:path";
import { startValidator } from "../config/start-validators.ts";
import { toEJSONText } from "../data/documents.ts";
import { namespaceError } from "../data/namespaces.ts";
import { appClockRefusal } from "../state/clock.ts";
import type { Collection } from "../store/memory/documents.ts";
import { type MemorySnapshot, MemoryStore } from "../store/memory/memory-store.ts";
import { StateImportError } from "../store/state-import.ts";
import type { State, StateReading } from "../store/store.ts";
import type { Emulator } from "./emulator.ts";

export type { State };
export { StateImportError };

/** Everything: the store's records with this instance's clocks and the signing secret. */
export async function exportState(emulator: Emulator): Promise<State> {
  const stored = await emulator.store.exportState();
  return {
    format: "app-services-harness-state",
    version: 1,
    exportedAt: new Date().toISOString(),
    signingSecret: emulator.signingSecret,
    apps: stored.apps.map((app) => ({ ...app, clockOffsetMs: emulator.apps.clockOffsetOf(app.appId) })),
    emailjsAccounts: stored.emailjsAccounts.map((account) => ({
      ...account,
      clockOffsetMs: emulator.emailjs.cachedClockOffset(account.publicKey),
    })),
    mail: stored.mail,
  };
}

/** Replaces the whole state; checks everything first, so a bad import changes nothing. */
export async function importState(emulator: Emulator, value: unknown): Promise<void> {
  const validateState = startValidator("state");
  if (!validateState(value)) {
    const problem = validateState.errors?.[0];
    throw new StateImportError(
      `not a state export: ${problem ? `${problem.instancePath || "/"} ${problem.message}` : "invalid"}`,
    );
  }
  const state = value as State;
  for (const app of state.apps) {
    const clockRefusal = appClockRefusal(app.clockOffsetMs);
    if (clockRefusal !== null) throw new StateImportError(`app ${app.appId}: ${clockRefusal}`);
    // What the control API's own entries refuse is refused here too (insertDocuments' namespaces).
    for (const { database, collection } of app.collections) {
      const problem = namespaceError(database, collection);
      if (problem !== undefined) throw new StateImportError(`app ${app.appId}: ${problem}`);
    }
  }
  // Each message's id is its own: the control API reads and deletes a message by it. (Mail of an
  // app deleted since is kept, as the running server keeps it.)
  const mailIds = new Set<string>();
  for (const message of state.mail) {
    if (mailIds.has(message.id)) throw new StateImportError(`mail ${message.id}: its id is another message's too`);
    mailIds.add(message.id);
  }
  await emulator.store.importState(state);
  emulator.apps.setClockOffsets(new Map(state.apps.map((app) => [app.appId, app.clockOffsetMs])));
  emulator.emailjs.setClockOffsets(new Map(state.emailjsAccounts.map((a) => [a.publicKey, a.clockOffsetMs])));
  emulator.setSigningSecret(state.signingSecret);
  // Anonymous users past their lifetime by the imported clocks are not brought back.
  await emulator.removeEndedUsers();
}

export const stateFileName = "state.json";

/** Writes a file so that readers see either its old or its new content, whatever happens. */
export function writeFileAtomic(path: string, content: string): void {
  const temp = `${path}.${process.pid}.${Date.now()}.tmp`;
  const fd = openSync(temp, "w", 0o600);
  try {
    writeSync(fd, content);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, path);
  const dir = openSync(join(path, ".."), "r");
  try {
    fsyncSync(dir);
  } finally {
    closeSync(dir);
  }
}

/** The longest the save works before it lets requests in (ms of one event-loop turn). */
const sliceMs = 8;
/** Documents' text is kept in groups of about this many UTF-16 units. */
const groupLength = 256 * 1024;
/** Text written in pieces of about this many UTF-16 units (each piece is encoded on the main thread). */
const writePieceLength = 1 << 20;

/** Lets the event loop serve what waits once a slice of work has taken `sliceMs`. */
class Slices {
  private started = performance.now();

  async yieldIfDue(): Promise<void> {
    if (performance.now() - this.started < sliceMs) return;
    await new Promise((resolve) => setImmediate(resolve));
    this.started = performance.now();
  }
}

/**
 * `writeFileAtomic` for large text without blocking: the pieces are encoded and written a
 * megabyte at a time, the file synced, renamed over the old one and the folder synced, each on
 * libuv's threads. A crash at any moment leaves the old file or the new one.
 */
export async function writeTextAtomic(path: string, pieces: string[]): Promise<void> {
  const temp = `${path}.${process.pid}.${Date.now()}.tmp`;
  const file = await open(temp, "w", 0o600);
  try {
    let batch: string[] = [];
    let batched = 0;
    const flush = async () => {
      if (batched > 0) await file.write(batch.join(""));
      batch = [];
      batched = 0;
    };
    for (const piece of pieces) {
      for (let at = 0; at < piece.length; ) {
        let end = Math.min(piece.length, at + writePieceLength - batched);
        // Never between the two halves of a surrogate pair.
        if (end < piece.length && isHighSurrogate(piece.charCodeAt(end - 1))) end--;
        batch.push(at === 0 && end === piece.length ? piece : piece.slice(at, end));
        batched += end - at;
        at = end;
        if (batched >= writePieceLength - 1) await flush();
      }
    }
    await flush();
    await file.sync();
  } finally {
    await file.close();
  }
  await rename(temp, path);
  const dir = await open(dirname(path), "r");
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
}

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;

/** The state file's text, in pieces, and what identifies its content (the export time aside). */
interface Rendered {
  pieces: string[];
  fingerprint: string;
}

/**
 * Text pieces and the hash of what `add` adds (what `pieces.push` adds directly, such as the export
 * time, is not content: not part of the fingerprint); `stand` hashes what stands for pieces pushed
 * unhashed (a collection's text: its identity and version).
 */
function hashedPieces() {
  const hash = createHash("sha256");
  const pieces: string[] = [];
  return {
    pieces,
    add(text: string) {
      pieces.push(text);
      hash.update(text);
    },
    stand: (text: string) => void hash.update(text),
    fingerprint: () => hash.digest("hex"),
  };
}

/**
 * The whole state as JSON text, in pieces (never one string: a state may pass the longest string
 * V8 makes, ~512 MB), built a slice at a time so that requests are served meanwhile. Of the
 * in-memory store, from one snapshot, each collection's text kept for the next render while the
 * collection does not change (the --data-dir saves); of another store, from its reading.
 */
export class StateText {
  /** Each collection's documents as Extended JSON text, for the content it had at `version`. */
  private readonly documentsText = new WeakMap<Collection, { version: number; pieces: string[] }>();
  private readonly collectionIds = new WeakMap<Collection, number>();
  private nextCollectionId = 0;

  constructor(private readonly emulator: Emulator) {}

  async render(): Promise<Rendered> {
    const { store } = this.emulator;
    if (!(store instanceof MemoryStore)) return this.renderReading();
    const snapshot = await store.wholeSnapshot();
    const slices = new Slices();
    const { pieces, add, stand, fingerprint } = hashedPieces();
    const field = (name: string, value: unknown, first = false) =>
      add(`${first ? "" : ","}${JSON.stringify(name)}:${JSON.stringify(value)}`);
    add('{"format":"app-services-harness-state","version":1');
    // The export time is not content: not part of the fingerprint.
    pieces.push(`,"exportedAt":${JSON.stringify(new Date().toISOString())}`);
    field("signingSecret", this.emulator.signingSecret);
    add(',"apps":[');
    for (const [i, { saved, collections }] of snapshot.apps.entries()) {
      add(i === 0 ? "{" : ",{");
      for (const [j, [name, value]] of Object.entries(saved).entries()) field(name, value, j === 0);
      field("clockOffsetMs", this.emulator.apps.clockOffsetOf(saved.appId));
      add(',"collections":[');
      for (const [k, c] of collections.entries()) {
        add(
          `${k === 0 ? "" : ","}{"database":${JSON.stringify(c.database)},"collection":${JSON.stringify(c.collection)},"documents":`,
        );
        pieces.push(...(await this.documentsOf(c, slices)));
        stand(`\u0000${this.idOf(c.source)}:${c.version}\u0000`);
        // Whom they count for: the same version, the same owners (part of the fingerprint above).
        if (c.owners.length > 0) pieces.push(`,"owners":${JSON.stringify(c.owners)}`);
        add("}");
      }
      add("]}");
      await slices.yieldIfDue();
    }
    add('],"emailjsAccounts":[');
    for (const [i, account] of snapshot.emailjsAccounts.entries()) {
      add(
        `${i === 0 ? "" : ","}${JSON.stringify({ ...account, clockOffsetMs: this.emulator.emailjs.cachedClockOffset(account.publicKey) })}`,
      );
    }
    add('],"mail":[');
    for (const [i, message] of snapshot.mail.entries()) {
      add(`${i === 0 ? "" : ","}${JSON.stringify(message)}`);
      await slices.yieldIfDue();
    }
    add("]}\n");
    return { pieces, fingerprint: fingerprint() };
  }

  /**
   * A collection's documents as an Extended JSON array, in pieces of about `groupLength` (no long
   * join in one go): the pieces of the last save when the collection did not change since.
   */
  private async documentsOf(
    c: MemorySnapshot["apps"][number]["collections"][number],
    slices: Slices,
  ): Promise<string[]> {
    const cached = this.documentsText.get(c.source);
    if (cached?.version === c.version) return cached.pieces;
    const pieces: string[] = [];
    let group: string[] = [];
    let grouped = 0;
    for (const doc of c.documents) {
      const text = toEJSONText(doc);
      group.push(text);
      grouped += text.length;
      if (grouped >= groupLength) {
        pieces.push(group.join(","));
        group = [];
        grouped = 0;
      }
      await slices.yieldIfDue();
    }
    if (group.length > 0) pieces.push(group.join(","));
    const array = ["[", ...pieces.flatMap((piece, i) => (i === 0 ? [piece] : [",", piece])), "]"];
    this.documentsText.set(c.source, { version: c.version, pieces: array });
    return array;
  }

  private idOf(collection: Collection): number {
    let id = this.collectionIds.get(collection);
    if (id === undefined) {
      id = this.nextCollectionId++;
      this.collectionIds.set(collection, id);
    }
    return id;
  }

  /**
   * The whole state's text as the export sends it: of the in-memory store, its rendering (above);
   * of a store that reads its state as it is written out (`StateReading`), made as its pieces are
   * taken, so that a batch of it at most is in memory at a time.
   */
  async stream(): Promise<Iterable<string> | AsyncIterable<string>> {
    const { store } = this.emulator;
    if (store instanceof MemoryStore) return (await this.render()).pieces;
    return this.piecesOf(await store.readState());
  }

  /**
   * Another store's text whole, from its reading (no such store is saved to a file: its
   * fingerprint counts the export time too).
   */
  private async renderReading(): Promise<Rendered> {
    const { pieces, add, fingerprint } = hashedPieces();
    for await (const piece of this.piecesOf(await this.emulator.store.readState())) add(piece);
    return { pieces, fingerprint: fingerprint() };
  }

  /** A reading's text, made as its pieces are taken; the reading ends with it. */
  async *piecesOf(reading: StateReading): AsyncGenerator<string> {
    try {
      const { emulator } = this;
      /** An object's JSON without its closing brace, so that more fields can follow. */
      const opened = (value: object) => JSON.stringify(value).slice(0, -1);
      yield `{"format":"app-services-harness-state","version":1,"exportedAt":${JSON.stringify(new Date().toISOString())}`;
      yield `,"signingSecret":${JSON.stringify(emulator.signingSecret)},"apps":[`;
      let first = true;
      for await (const { collections, ...app } of reading.apps) {
        yield `${first ? "" : ","}${opened({ ...app, clockOffsetMs: emulator.apps.clockOffsetOf(app.appId) })},"collections":[`;
        first = false;
        for (const [i, c] of collections.entries()) {
          yield `${i === 0 ? "" : ","}${opened({ database: c.database, collection: c.collection })},"documents":[`;
          yield* joined(c.documents);
          const owners = c.owners();
          yield `]${owners.length > 0 ? `,"owners":${JSON.stringify(owners)}` : ""}}`;
        }
        yield "]}";
      }
      const accounts = (await reading.emailjsAccounts()).map((account) => ({
        ...account,
        clockOffsetMs: emulator.emailjs.cachedClockOffset(account.publicKey),
      }));
      yield `],"emailjsAccounts":${JSON.stringify(accounts)},"mail":[`;
      yield* joined(mapped(reading.mail, (message) => JSON.stringify(message)));
      yield "]}\n";
    } finally {
      await reading.end();
    }
  }
}

/**
 * JSON texts joined with commas, in pieces of about `groupLength`, the event loop let go between
 * slices of the work.
 */
async function* joined(texts: AsyncIterable<string>): AsyncGenerator<string> {
  const slices = new Slices();
  let group: string[] = [];
  let grouped = 0;
  let first = true;
  for await (const text of texts) {
    group.push(text);
    grouped += text.length;
    if (grouped >= groupLength) {
      yield `${first ? "" : ","}${group.join(",")}`;
      first = false;
      group = [];
      grouped = 0;
    }
    await slices.yieldIfDue();
  }
  if (group.length > 0) yield `${first ? "" : ","}${group.join(",")}`;
}

async function* mapped<T, U>(values: AsyncIterable<T>, map: (value: T) => U): AsyncGenerator<U> {
  for await (const value of values) yield map(value);
}

export class StatePersistence {
  private timer: NodeJS.Timeout | null = null;
  private saving: Promise<boolean> | null = null;
  private lastSaved: string | null = null;
  /** The state's text, each collection's kept between saves. */
  private readonly text: StateText;
  readonly file: string;

  constructor(
    private readonly emulator: Emulator,
    private readonly dir: string,
  ) {
    this.file = join(dir, stateFileName);
    this.text = new StateText(emulator);
  }

  /** Loads the saved state, if any (temporary files of an interrupted save are removed); true when there was one. */
  async load(): Promise<boolean> {
    mkdirSync(this.dir, { recursive: true });
    for (const name of readdirSync(this.dir)) {
      if (name.startsWith(`${stateFileName}.`) && name.endsWith(".tmp")) rmSync(join(this.dir, name), { force: true });
    }
    if (!existsSync(this.file)) return false;
    const text = readFileSync(this.file, "utf8");
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (error) {
      throw new Error(`${this.file} is not valid JSON: ${(error as Error).message}`);
    }
    await importState(this.emulator, parsed);
    this.lastSaved = (await this.text.render()).fingerprint;
    return true;
  }

  /**
   * Saves when the state changed since the last save (the export time aside). The state is taken
   * at one moment, then serialized and written in slices (requests are served in between): only
   * the collections that changed since the last save are serialized again.
   */
  async save(): Promise<boolean> {
    const { pieces, fingerprint } = await this.text.render();
    if (fingerprint === this.lastSaved) return false;
    await writeTextAtomic(this.file, pieces);
    this.lastSaved = fingerprint;
    return true;
  }

  start(intervalMs: number): void {
    this.timer = setInterval(() => {
      // A save still running (a large state) is not started again.
      if (this.saving) return;
      this.saving = this.save();
      this.saving
        .catch((error: unknown) => {
          process.stderr.write(`Saving state to ${this.file} failed: ${(error as Error).message}\n`);
          return false;
        })
        .finally(() => {
          this.saving = null;
        });
    }, intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.saving?.catch(() => false);
    await this.save();
  }
}
