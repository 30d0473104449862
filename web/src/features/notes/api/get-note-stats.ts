import { callFunction } from "../../../lib/api/call-function.ts";
import { fromEjson } from "./notes-ejson.ts";

export interface NoteStats {
  count: number;
  words: number;
  lastUpdated: Date | null;
}

/** The app function `noteStats`: how many notes, how many words, and the newest change. */
export async function getNoteStats(signal?: AbortSignal): Promise<NoteStats> {
  const reply = fromEjson(await callFunction({ name: "noteStats", arguments: [] }, signal)) as Record<
    string,
    unknown
  > | null;
  const number = (value: unknown) => (typeof value === "number" && Number.isFinite(value) ? value : 0);
  return {
    count: number(reply?.count),
    words: number(reply?.words),
    lastUpdated: reply?.lastUpdated instanceof Date ? reply.lastUpdated : null,
  };
}
