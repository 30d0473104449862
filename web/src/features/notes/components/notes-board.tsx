import { useCallback, useEffect, useRef, useState } from "react";
import { Button } from "../../../components/button.tsx";
import { ConfirmDialog } from "../../../components/dialog.tsx";
import { ErrorMessage, LoadFailed, StatusMessage } from "../../../components/messages.tsx";
import { Loading } from "../../../components/page.tsx";
import { errorMessage } from "../../../lib/errors/error-message.ts";
import { useAsyncAction } from "../../../lib/hooks/use-async-action.ts";
import { useResource } from "../../../lib/hooks/use-resource.ts";
import { useSession } from "../../../lib/session/use-session.ts";
import { deleteNote } from "../api/delete-note.ts";
import { getNoteStats } from "../api/get-note-stats.ts";
import { insertNote, type NoteDraft, prepareNote } from "../api/insert-note.ts";
import type { Note } from "../api/notes-ejson.ts";
import { NoteChangedError, NoteGoneError, updateNote } from "../api/update-note.ts";
import { changedNoteId, describeChange, needsReload } from "../hooks/apply-change.ts";
import { listWithDrafts } from "../hooks/edit-drafts.ts";
import { useNotes } from "../hooks/use-notes.ts";
import { type LiveStatus, useNotesChangeStream } from "../hooks/use-notes-change-stream.ts";
import { EmailNoteDialog } from "./email-note-dialog.tsx";
import { NoteForm } from "./note-form.tsx";
import { NoteItem } from "./note-item.tsx";
import { NoteStatsSummary } from "./note-stats.tsx";

const liveText: Record<LiveStatus, string> = {
  connecting: "Connecting live updates…",
  live: "Live updates are on: changes made elsewhere appear here.",
  reconnecting: "Live updates are paused. Reconnecting…",
  unavailable: "Live updates are paused: the service is unavailable. Reconnecting…",
};

const noteErrorMessage = (error: unknown) => (error instanceof NoteGoneError ? error.message : errorMessage(error));

/** How long the notes wait for their change stream before loading without it. */
const streamWaitMs = 1000;

function Board({ userId, email, displayName }: { userId: string; email: string | null; displayName: string | null }) {
  // The notes and figures load once the change stream is open, so that nothing changes unseen
  // between their load and the stream's start; if it is not open within a second, or failed, they
  // load without it and again when it opens.
  const [streamOpened, setStreamOpened] = useState(false);
  const [waited, setWaited] = useState(false);
  useEffect(() => {
    const timer = setTimeout(() => setWaited(true), streamWaitMs);
    return () => clearTimeout(timer);
  }, []);
  const [streamFailed, setStreamFailed] = useState(false);
  const loadNow = streamOpened || waited || streamFailed;
  const loadedWithoutStream = useRef(false);
  useEffect(() => {
    if (loadNow && !streamOpened) loadedWithoutStream.current = true;
  }, [loadNow, streamOpened]);
  const notes = useNotes(userId, loadNow);
  // The notes being edited, by id: the version each edit began from.
  const [editing, setEditing] = useState<Record<string, Note>>({});
  const edit = useCallback((note: Note) => setEditing((all) => ({ ...all, [note.id]: note })), []);
  const stopEditing = useCallback(
    (id: string) =>
      setEditing((all) => {
        const rest = { ...all };
        delete rest[id];
        return rest;
      }),
    [],
  );
  const stats = useResource((signal) => getNoteStats(signal), [userId], loadNow);
  const [announcement, setAnnouncement] = useState<string | null>(null);
  const [deleting, setDeleting] = useState<Note | null>(null);
  const [emailing, setEmailing] = useState<Note | null>(null);
  // Notes changed from this tab: their stream events are not announced as changes "elsewhere".
  const own = useRef(new Set<string>());
  const statsTimer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);

  const refreshStats = useCallback(() => {
    clearTimeout(statsTimer.current);
    // Several changes in a row ask for the figures once.
    statsTimer.current = setTimeout(stats.reload, 300);
  }, [stats.reload]);
  useEffect(() => () => clearTimeout(statsTimer.current), []);

  const live = useNotesChangeStream({
    onChange: (event) => {
      refreshStats();
      if (needsReload(event)) {
        notes.reload();
        return;
      }
      notes.applyEvent(event);
      const id = changedNoteId(event);
      if (id !== null && own.current.delete(id)) return;
      setAnnouncement(describeChange(event));
    },
    onOpen: (reopened) => {
      setStreamOpened(true);
      if (!reopened && !loadedWithoutStream.current) return;
      notes.reload();
      stats.reload();
    },
  });
  useEffect(() => {
    if (live === "reconnecting" || live === "unavailable") setStreamFailed(true);
  }, [live]);

  const create = useAsyncAction(async (draft: NoteDraft) => {
    const { note, document } = prepareNote(userId, draft);
    own.current.add(note.id);
    await insertNote(document);
    notes.put(note);
    refreshStats();
    setAnnouncement(`The note “${note.title}” has been added.`);
  });

  const save = useCallback(
    async (base: Note, draft: NoteDraft): Promise<string | null> => {
      own.current.add(base.id);
      try {
        notes.put(await updateNote(base, draft));
        stopEditing(base.id);
        refreshStats();
        setAnnouncement(`The note “${draft.title}” has been saved.`);
        return null;
      } catch (error) {
        own.current.delete(base.id);
        // Refused: the note moved on (or went) since the edit began. The list shows it as it is
        // now, and the editor, comparing, says what happened and keeps the text.
        if (error instanceof NoteChangedError) notes.put(error.current);
        else if (error instanceof NoteGoneError) notes.remove(base.id);
        else return noteErrorMessage(error);
        return null;
      }
    },
    [notes.put, notes.remove, refreshStats, stopEditing],
  );

  const saveAsNew = useCallback(
    async (base: Note, draft: NoteDraft): Promise<string | null> => {
      const { note, document } = prepareNote(userId, draft);
      own.current.add(note.id);
      try {
        await insertNote(document);
      } catch (error) {
        own.current.delete(note.id);
        return noteErrorMessage(error);
      }
      notes.put(note);
      stopEditing(base.id);
      refreshStats();
      setAnnouncement(`Your text has been saved as a new note “${note.title}”.`);
      return null;
    },
    [userId, notes.put, refreshStats, stopEditing],
  );

  const remove = useAsyncAction(async (note: Note) => {
    own.current.add(note.id);
    await deleteNote(note);
    notes.remove(note.id);
    refreshStats();
    setAnnouncement(`The note “${note.title || "Untitled note"}” has been deleted.`);
  });

  return (
    <>
      <StatusMessage>{announcement}</StatusMessage>
      <section aria-labelledby="overview-heading" className="card">
        <h2 id="overview-heading">Overview</h2>
        {stats.state === "error" ? <LoadFailed error={stats.error} onRetry={stats.reload} /> : null}
        {stats.state === "error" && stats.data === undefined ? null : <NoteStatsSummary stats={stats.data} />}
        <p className={`live-status live-${live}`}>{liveText[live]}</p>
      </section>

      <section aria-labelledby="new-note-heading" className="card">
        <h2 id="new-note-heading">New note</h2>
        <NoteForm
          submitLabel="Add note"
          busy={create.pending}
          resetOnSave
          onSubmit={async (draft) => (await create.run(draft)).ok}
        >
          <ErrorMessage>{create.error ? noteErrorMessage(create.error) : null}</ErrorMessage>
        </NoteForm>
      </section>

      <section aria-labelledby="all-notes-heading" className="card">
        <h2 id="all-notes-heading">All notes</h2>
        {notes.status === "error" ? <LoadFailed error={notes.error} onRetry={notes.reload} /> : null}
        {notes.status === "loading" && notes.notes.length === 0 ? (
          <Loading>Loading your notes…</Loading>
        ) : notes.status !== "error" && notes.notes.length === 0 && Object.keys(editing).length === 0 ? (
          <p>You have no notes yet. Write your first one above.</p>
        ) : (
          <ul className="note-list">
            {listWithDrafts(notes.notes, editing).map(({ note, base, gone }) => (
              <li key={note.id}>
                <NoteItem
                  note={note}
                  base={base}
                  gone={gone}
                  onEdit={edit}
                  onStopEditing={stopEditing}
                  onSave={save}
                  onSaveAsNew={saveAsNew}
                  onReload={edit}
                  onDelete={setDeleting}
                  onEmail={setEmailing}
                />
              </li>
            ))}
          </ul>
        )}
        {notes.status === "ready" && notes.more ? (
          <div className="actions">
            <Button variant="secondary" busy={notes.older.status === "loading"} onClick={notes.loadOlder}>
              Show older notes
            </Button>
          </div>
        ) : null}
        {notes.older.status === "error" ? <LoadFailed error={notes.older.error} onRetry={notes.loadOlder} /> : null}
      </section>

      <ConfirmDialog
        open={deleting !== null}
        title={`Delete “${deleting?.title || "Untitled note"}”?`}
        confirmLabel="Delete note"
        busy={remove.pending}
        error={remove.error ? noteErrorMessage(remove.error) : null}
        onCancel={() => {
          remove.reset();
          setDeleting(null);
        }}
        onConfirm={async () => {
          if (!deleting) return;
          if ((await remove.run(deleting)).ok) setDeleting(null);
        }}
      >
        <p>The note will be deleted everywhere. This cannot be undone.</p>
      </ConfirmDialog>

      <EmailNoteDialog
        note={emailing}
        defaultName={displayName ?? ""}
        defaultReplyTo={email ?? ""}
        onClose={() => setEmailing(null)}
        onSent={(to) => {
          setAnnouncement(`The note “${emailing?.title ?? ""}” has been sent to ${to}.`);
          setEmailing(null);
        }}
      />
    </>
  );
}

/** The notes page: figures, a new-note form and the list, kept live by the change stream. */
export function NotesBoard() {
  const session = useSession();
  if (session.status !== "signed-in") return null;
  return <Board key={session.userId} userId={session.userId} email={session.email} displayName={session.displayName} />;
}
