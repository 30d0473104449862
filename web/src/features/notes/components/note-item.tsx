import { useId, useState } from "react";
import { Button } from "../../../components/button.tsx";
import { ErrorMessage } from "../../../components/messages.tsx";
import type { NoteDraft } from "../api/insert-note.ts";
import type { Note } from "../api/notes-ejson.ts";
import { NoteForm } from "./note-form.tsx";

interface NoteItemProps {
  note: Note;
  /** Saves the edit; resolves with an error sentence, or null when saved. */
  onSave: (note: Note, draft: NoteDraft) => Promise<string | null>;
  onDelete: (note: Note) => void;
  onEmail: (note: Note) => void;
}

export function NoteItem({ note, onSave, onDelete, onEmail }: NoteItemProps) {
  const titleId = useId();
  const [editing, setEditing] = useState(false);
  const [saving, setSaving] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const label = note.title || "Untitled note";

  if (editing) {
    return (
      <article aria-labelledby={titleId} className="note note-editing">
        <h3 id={titleId}>Edit “{label}”</h3>
        <NoteForm
          initial={{ title: note.title, body: note.body }}
          submitLabel="Save changes"
          busy={saving}
          autoFocus
          onCancel={() => {
            setEditing(false);
            setError(null);
          }}
          onSubmit={async (draft) => {
            setSaving(true);
            setError(null);
            const problem = await onSave(note, draft);
            setSaving(false);
            if (problem) setError(problem);
            else setEditing(false);
            return problem === null;
          }}
        >
          <ErrorMessage>{error}</ErrorMessage>
        </NoteForm>
      </article>
    );
  }

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
        <Button variant="secondary" onClick={() => setEditing(true)}>
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
