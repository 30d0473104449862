// @vitest-environment jsdom
/**
 * How the inspector frames captured mail HTML: a sandbox without scripts or escaping popups, a
 * policy that blocks remote images unless a person loads them, links that open with no opener or
 * referrer, and nothing of the mail that could navigate or reach out by itself.
 */
import { describe, expect, it } from "vitest";
import {
  hasRemoteImages,
  mailFrameDocument,
  mailFramePolicy,
  mailFrameSandbox,
} from "../../src/inspector/ui/mail-frame.ts";

const tracking = [
  '<html><head><meta http-equiv="refresh" content="0;url=https://tracker.example/r">',
  '<base href="https://tracker.example/"><link rel="stylesheet" href="https://tracker.example/s.css">',
  '<link rel="dns-prefetch" href="//tracker.example"><style>p { color: red }</style></head>',
  '<body><p>Hello</p><img src="https://tracker.example/pixel.gif" alt="">',
  '<a href="https://shop.example.com/list">the list</a><script>alert(1)</script>',
  '<iframe src="https://tracker.example/frame"></iframe></body></html>',
].join("");

function parse(html: string): Document {
  return new DOMParser().parseFromString(html, "text/html");
}

describe("the mail frame", () => {
  it("is sandboxed with popups that stay sandboxed: no scripts, forms, top navigation or escape", () => {
    expect(mailFrameSandbox.split(/\s+/)).toEqual(["allow-popups"]);
    expect(mailFrameSandbox).not.toContain("escape");
    expect(mailFrameSandbox).not.toContain("allow-scripts");
    expect(mailFrameSandbox).not.toContain("allow-same-origin");
    expect(mailFrameSandbox).not.toContain("allow-top-navigation");
  });

  it("blocks remote images by default and allows them only when asked", () => {
    const blocked = mailFramePolicy(false);
    expect(blocked).toContain("default-src 'none'");
    expect(blocked).toMatch(/img-src data:(;|$)/);
    expect(mailFramePolicy(true)).toContain("img-src * data:");
    for (const loadImages of [false, true]) {
      const frame = parse(mailFrameDocument(tracking, { loadImages }));
      const csp = frame.head.querySelector('meta[http-equiv="Content-Security-Policy"]');
      expect(csp?.getAttribute("content")).toBe(mailFramePolicy(loadImages));
      // The policy is the head's first rule after the charset: nothing of the mail comes before it.
      expect(frame.head.firstElementChild?.getAttribute("charset")).toBe("utf-8");
      expect(frame.head.children[1]).toBe(csp);
    }
  });

  it("sends no referrer and opens links with no opener", () => {
    const frame = parse(mailFrameDocument(tracking, { loadImages: false }));
    expect(frame.head.querySelector('meta[name="referrer"]')?.getAttribute("content")).toBe("no-referrer");
    const link = frame.querySelector("a")!;
    expect(link.getAttribute("href")).toBe("https://shop.example.com/list");
    expect(link.getAttribute("target")).toBe("_blank");
    expect(link.getAttribute("rel")).toBe("noopener noreferrer");
  });

  it("drops what navigates, re-bases links or reaches out, and keeps the content and inline styles", () => {
    const frame = parse(mailFrameDocument(tracking, { loadImages: true }));
    expect(frame.querySelector('meta[http-equiv="refresh"]')).toBeNull();
    expect(frame.querySelector("base, link, script, iframe")).toBeNull();
    expect(frame.querySelector("style")?.textContent).toBe("p { color: red }");
    expect(frame.querySelector("p")?.textContent).toBe("Hello");
    // The image stays: the policy decides whether it loads.
    expect(frame.querySelector("img")?.getAttribute("src")).toBe("https://tracker.example/pixel.gif");
  });

  it("frames a mail that is a frameset, or nothing, with an empty body", () => {
    for (const html of ["<frameset><frame src=x></frameset>", ""]) {
      const frame = parse(mailFrameDocument(html, { loadImages: false }));
      expect(frame.querySelector("frameset, frame")).toBeNull();
      expect(frame.body.textContent).toBe("");
    }
  });

  it("drops what a cleaned mail grows again when the frame parses it (nested forms, foreign content)", () => {
    const mutating = [
      '<form><math><mtext></form><form><mglyph><style></math><meta http-equiv="refresh" content="0;url=https://tracker.example/m">',
      '<svg></p><style><a id="</style><meta http-equiv=refresh content=0;url=https://tracker.example/s>">',
      '<math><mtext><table><mglyph><style><!--</style><img title="--&gt;&lt;/mglyph&gt;&lt;meta http-equiv=refresh content=0;url=https://tracker.example/t&gt;">',
    ];
    for (const html of mutating) {
      const framed = mailFrameDocument(html, { loadImages: false });
      // What the browser builds of the frame's text, parsed again and again, holds none of it.
      let frame = parse(framed);
      for (let pass = 0; pass < 3; pass++) {
        expect(frame.querySelector(`meta[http-equiv="refresh" i], ${"base, link, script, iframe"}`), html).toBeNull();
        frame = parse(`<!doctype html>${frame.documentElement.outerHTML}`);
      }
    }
  });

  it("tells whether a message has remote images", () => {
    expect(hasRemoteImages(tracking)).toBe(true);
    expect(hasRemoteImages('<p style="background: url(//cdn.example/b.png)">x</p>')).toBe(true);
    expect(hasRemoteImages('<img src="data:image/png;base64,AAAA"><a href="https://x.example">x</a>')).toBe(false);
  });
});
