/**
 * How captured mail HTML is shown: in a sandboxed `srcdoc` frame that runs no script, submits no
 * form, cannot navigate the inspector, and opens links only as sandboxed popups (no
 * `allow-popups-to-escape-sandbox`: a page a mail links to never runs with the inspector's
 * origin or escapes the sandbox; the message's links are listed outside the frame for a person to
 * open on purpose). Remote content is blocked by the frame's own policy (a `<meta>` CSP, on top of
 * the inspector page's, which the frame inherits): images load only when a person asks for them,
 * per message, so opening a mail sent through EmailJS by any page tells its sender nothing.
 *
 * Mail HTML is parsed into an inert document (DOMParser loads and runs nothing), cleaned of what
 * could move or leak (refresh, base, link, prefetch hints) and written back with the frame's head.
 */

/** The frame's sandbox: popups (links) only, which stay sandboxed; no scripts, forms, top navigation. */
export const mailFrameSandbox = "allow-popups";

/** The frame's own policy: nothing from anywhere, inline styles, images only from the message itself or when allowed. */
export function mailFramePolicy(loadImages: boolean): string {
  return [
    "default-src 'none'",
    "style-src 'unsafe-inline'",
    `img-src ${loadImages ? "* data:" : "data:"}`,
    "font-src data:",
    "media-src 'none'",
    "form-action 'none'",
  ].join("; ");
}

/** Elements of a mail that never render in the frame: they navigate, re-base links or reach out. */
const removed = "meta, base, link, script, noscript, iframe, frame, frameset, object, embed";

/** Does the mail reference an image (or a background) from the network? */
export function hasRemoteImages(html: string): boolean {
  return (
    /(?:src|background|srcset)\s*=\s*["']?\s*(?:https?:)?\/\//i.test(html) ||
    /url\(\s*["']?\s*(?:https?:)?\/\//i.test(html)
  );
}

/**
 * The frame's document: the mail's body and styles under the frame's own head. Cleaned until
 * cleaning changes nothing: markup can parse into other elements the second time (nested forms,
 * foreign content — "mutation XSS"), and the frame parses the text again. A mail that never
 * settles is shown empty.
 */
export function mailFrameDocument(html: string, options: { loadImages: boolean }): string {
  let text = html;
  for (let pass = 0; pass < 5; pass++) {
    const framed = cleanedOnce(text, options);
    if (framed === text) return framed;
    text = framed;
  }
  return cleanedOnce("", options);
}

function cleanedOnce(html: string, { loadImages }: { loadImages: boolean }): string {
  const parsed = new DOMParser().parseFromString(html, "text/html");
  for (const element of Array.from(parsed.querySelectorAll(removed))) element.remove();
  for (const link of Array.from(parsed.querySelectorAll("a[href], area[href]"))) {
    link.setAttribute("target", "_blank");
    link.setAttribute("rel", "noopener noreferrer");
  }
  const head = [
    '<meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="${mailFramePolicy(loadImages)}">`,
    '<meta name="referrer" content="no-referrer">',
    '<meta http-equiv="x-dns-prefetch-control" content="off">',
    // The mail's own styles (in its head) stay: inline CSS only, the policy refuses remote sheets.
    ...Array.from(parsed.head.querySelectorAll("style"), (style) => style.outerHTML),
  ].join("");
  // (A frameset, removed, leaves no body.)
  return `<!doctype html><html><head>${head}</head>${parsed.body?.outerHTML ?? "<body></body>"}</html>`;
}
