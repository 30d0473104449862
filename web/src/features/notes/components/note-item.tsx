import { useId, useState } from "react";
import { Button } from "../../../components/button.tsx";
import { ErrorMessage } from "../../../components/messages.tsx";
import type { NoteDraft } from "../api/insert-note.ts";
import type { Note } from "../api/notes-ejson.ts";
import { editConflict } from "../hooks/edit-drafts.ts";
import { NoteForm } from "./note-form.tsx";

interface NoteItemProps {
  /** The note as stored now (for a note deleted during its edit: the version being edited). */
  note: Note;
  /** The version being edited, or null when the note is not being edited. */
  base: Note | null;
  /** Deleted elsewhere during its edit. */
  gone: boolean;
  onEdit: (note: Note) => void;
  onStopEditing: (id: string) => void;
  /** Saves the edit; resolves with an error sentence, or null (saved, or refused as a conflict). */
  onSave: (base: Note, draft: NoteDraft) => Promise<string | null>;
  /** Saves the draft as a new note; resolves with an error sentence, or null when saved. */
  onSaveAsNew: (base: Note, draft: NoteDraft) => Promise<string | null>;
  /** Starts the edit again from the note as stored now. */
  onReload: (note: Note) => void;
  onDelete: (note: Note) => void;
  onEmail: (note: Note) => void;
}

const labelOf = (note: Note) => note.title || "Untitled note";

const conflictText = {
  changed: (title: string) =>
    `“${title}” was changed in another window or on another device while you were editing it. Your text below has not been saved: save it as a new note, or reload the note to see the other change (your text is then discarded).`,
  deleted: (title: string) =>
    `“${title}” was deleted in another window or on another device while you were editing it. Your text below has not been saved: save it as a new note, or discard it.`,
};

export function NoteItem(props: NoteItemProps) {
  const { note, base, onEdit, onDelete, onEmail } = props;
  const titleId = useId();
  const label = labelOf(note);

  if (base) return <NoteEditor {...props} base={base} />;

  return (
    <article aria-labelledby={titleId} className="note">
      <h3 id={titleId}>{label}</h3>
      {note.body ? <p className="note-body">{note.body}</p> : null}
      {note.updatedAt ? (
        <p className="muted">
          Changed <time dateTime={note.updatedAt.toISOString()}>{note.updatedAt.toLocaleString()}</time>
        </p>
      ) : null}
      <div className="actions">
        <Button variant="secondary" onClick={() => onEdit(note)}>
          Edit<span className="visually-hidden"> “{label}”</span>
        </Button>
        <Button variant="secondary" onClick={() => onEmail(note)}>
          E-mail<span className="visually-hidden"> “{label}”</span>
        </Button>
        <Button variant="danger" onClick={() => onDelete(note)}>
          Delete<span className="visually-hidden"> “{label}”</span>
        </Button>
      </div>
    </article>
  );
}

/**
 * Editing a note. When the note is saved or deleted elsewhere meanwhile (the change stream says so,
 * or the save is refused), the editor says what happened and keeps the text: it can be saved as a
 * new note, or (a change) the note reloaded; it is never saved over the other change.
 */
function NoteEditor({
  note,
  base,
  gone,
  onStopEditing,
  onSave,
  onSaveAsNew,
  onReload,
}: NoteItemProps & { base: Note }) {
  const titleId = useId();
  const [saving, setSaving] = useState(false);
  const [error, setError] = useState<string | null>(null);
  // While this editor's own save runs, its echo on the change stream is no conflict.
  const conflict = saving ? null : editConflict(base, gone ? null : note);

  async function submit(draft: NoteDraft) {
    setSaving(true);
    setError(null);
    const problem = await (conflict ? onSaveAsNew(base, draft) : onSave(base, draft));
    setSaving(false);
    setError(problem);
    return problem === null;
  }

  return (
    <article aria-labelledby={titleId} className="note note-editing">
      <h3 id={titleId}>Edit “{labelOf(base)}”</h3>
      <NoteForm
        // A reload starts the form again from the stored note.
        key={`${base.version}:${base.updatedAt?.getTime()}`}
        initial={{ title: base.title, body: base.body }}
        submitLabel={conflict ? "Save as a new note" : "Save changes"}
        busy={saving}
        autoFocus
        onCancel={() => onStopEditing(base.id)}
        cancelLabel={conflict ? "Discard my text" : "Cancel"}
        extraActions={
          conflict === "changed" ? (
            <Button variant="secondary" onClick={() => onReload(note)} disabled={saving}>
              Reload the note
            </Button>
          ) : null
        }
        onSubmit={submit}
      >
        {conflict ? (
          <ErrorMessage focus={false}>{conflictText[conflict](labelOf(base))}</ErrorMessage>
        ) : (
          <ErrorMessage>{error}</ErrorMessage>
        )}
      </NoteForm>
    </article>
  );
}
