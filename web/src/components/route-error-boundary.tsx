import { Component, type ErrorInfo, type ReactNode } from "react";

interface State {
  error: unknown;
}

function isChunkLoadError(error: unknown): boolean {
  return (
    error instanceof Error &&
    /dynamically imported module|Importing a module script failed|error loading/i.test(error.message)
  );
}

/**
 * One per route: a page that breaks (or whose code cannot be downloaded) shows a message and a way
 * out instead of taking the whole app down.
 */
export class RouteErrorBoundary extends Component<{ children: ReactNode }, State> {
  override state: State = { error: null };

  static getDerivedStateFromError(error: unknown): State {
    return { error };
  }

  override componentDidCatch(error: unknown, info: ErrorInfo): void {
    console.error("A page failed to render", error, info.componentStack);
  }

  override render() {
    if (this.state.error === null) return this.props.children;
    const chunk = isChunkLoadError(this.state.error);
    return (
      <div className="page" role="alert">
        <h1>This page could not be shown</h1>
        <p>
          {chunk
            ? "Part of the app could not be downloaded. Check your connection and try again."
            : "Something went wrong while showing this page. Try again, or go back to the start."}
        </p>
        <div className="actions">
          <button
            type="button"
            className="button button-primary"
            onClick={() => (chunk ? window.location.reload() : this.setState({ error: null }))}
          >
            Try again
          </button>
          <a className="button button-secondary" href="/">
            Go to the start page
          </a>
        </div>
      </div>
    );
  }
}
