import { act, cleanup, render, screen } from "@testing-library/react";
import { Suspense, useState } from "react";
import { afterEach, describe, expect, it } from "vitest";
import { lazyRoute } from "./lazy-route.tsx";

afterEach(cleanup);

function deferredModule() {
  let resolve!: () => void;
  let loads = 0;
  const ready = new Promise<void>((r) => {
    resolve = r;
  });
  const load = async () => {
    loads += 1;
    await ready;
    return { default: () => <h1>Loaded page</h1> };
  };
  return { load, resolve, loads: () => loads };
}

const inSuspense = (node: React.ReactNode) => <Suspense fallback={<p>Loading…</p>}>{node}</Suspense>;

describe("lazyRoute", () => {
  it("shows the fallback until a page that was not preloaded arrives", async () => {
    const module = deferredModule();
    const Page = lazyRoute(module.load);
    render(inSuspense(<Page />));
    expect(screen.getByText("Loading…")).toBeTruthy();
    await act(async () => module.resolve());
    expect(await screen.findByRole("heading", { name: "Loaded page" })).toBeTruthy();
  });

  it("renders a preloaded page at once, without a fallback", async () => {
    const module = deferredModule();
    const Page = lazyRoute(module.load);
    const preloaded = Page.preload();
    module.resolve();
    await preloaded;
    render(inSuspense(<Page />));
    // Synchronously, in the first commit: no "Loading…" in between.
    expect(screen.getByRole("heading", { name: "Loaded page" })).toBeTruthy();
    expect(screen.queryByText("Loading…")).toBeNull();
  });

  it("loads a module once however often it is preloaded and rendered", async () => {
    const module = deferredModule();
    const Page = lazyRoute(module.load);
    void Page.preload();
    void Page.preload();
    render(inSuspense(<Page />));
    await act(async () => module.resolve());
    await screen.findByRole("heading", { name: "Loaded page" });
    expect(module.loads()).toBe(1);
  });

  it("keeps a page's state when the preload lands after it was shown", async () => {
    let resolve!: () => void;
    const ready = new Promise<void>((r) => {
      resolve = r;
    });
    function Counter() {
      const [count, setCount] = useState(0);
      return (
        <button type="button" onClick={() => setCount((n) => n + 1)}>
          Clicked {count}
        </button>
      );
    }
    const Page = lazyRoute(async () => {
      await ready;
      return { default: Counter };
    });
    const view = render(inSuspense(<Page />));
    await act(async () => resolve());
    const button = await screen.findByRole("button", { name: "Clicked 0" });
    act(() => button.click());
    await act(async () => {
      await Page.preload();
    });
    view.rerender(inSuspense(<Page />));
    expect(screen.getByRole("button", { name: "Clicked 1" })).toBeTruthy();
  });

  it("tries again after a failed load (a flaky network must not break the route for good)", async () => {
    let attempts = 0;
    const Page = lazyRoute(async () => {
      attempts += 1;
      if (attempts === 1) throw new Error("network down");
      return { default: () => <h1>Second try</h1> };
    });
    await expect(Page.preload()).rejects.toThrow("network down");
    await Page.preload();
    render(inSuspense(<Page />));
    expect(screen.getByRole("heading", { name: "Second try" })).toBeTruthy();
    expect(attempts).toBe(2);
  });
});
