import { Page } from "../../components/page.tsx";
import { NotesBoard } from "../../features/notes/components/notes-board.tsx";

export default function NotesRoute() {
  return (
    <Page title="Your notes">
      <NotesBoard />
    </Page>
  );
}
