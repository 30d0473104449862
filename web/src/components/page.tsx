import { type ReactNode, useEffect, useRef } from "react";

let firstPage = true;

/**
 * A page's heading and title. After an in-app navigation the heading takes the focus, so screen
 * readers announce the new page and keyboard users start from its top (not on the first load).
 */
export function Page({ title, children, intro }: { title: string; children: ReactNode; intro?: ReactNode }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${title} · Notes`;
    if (firstPage) firstPage = false;
    else heading.current?.focus();
  }, [title]);
  return (
    <div className="page">
      <h1 tabIndex={-1} ref={heading}>
        {title}
      </h1>
      {intro ? <div className="intro">{intro}</div> : null}
      {children}
    </div>
  );
}

export function Loading({ children }: { children: ReactNode }) {
  return (
    <p className="loading" role="status">
      <span className="spinner" aria-hidden="true" /> {children}
    </p>
  );
}
