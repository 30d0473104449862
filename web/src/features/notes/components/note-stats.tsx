import type { NoteStats } from "../api/get-note-stats.ts";

/** The figures of the `noteStats` function. */
export function NoteStatsSummary({ stats }: { stats: NoteStats | undefined }) {
  return (
    <dl className="stats">
      <div>
        <dt>Notes</dt>
        <dd>{stats ? stats.count : "…"}</dd>
      </div>
      <div>
        <dt>Words</dt>
        <dd>{stats ? stats.words : "…"}</dd>
      </div>
      <div>
        <dt>Last change</dt>
        <dd>
          {stats?.lastUpdated ? (
            <time dateTime={stats.lastUpdated.toISOString()}>{stats.lastUpdated.toLocaleString()}</time>
          ) : stats ? (
            "None yet"
          ) : (
            "…"
          )}
        </dd>
      </div>
    </dl>
  );
}
