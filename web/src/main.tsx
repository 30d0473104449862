import { createRoot } from "react-dom/client";
import { AppProvider } from "./app/provider.tsx";
import { AppRouter, preloadPageFor } from "./app/router.tsx";
// Validated on import (through lib/api-clients): an invalid configuration is explained in the page
// and stops the app before anything renders.
import "./config/env.ts";
import "./styles.css";

const root = document.getElementById("root");
if (!root) throw new Error("The page has no #root element.");
// The page the app opens on renders without a loading flash when its chunk arrives within 200 ms;
// on a slower network the shell shows first, with "Loading the page…".
// (A promise chain, not a top-level await: that would split the entry into several chunks.)
const firstPage = preloadPageFor(location.pathname).catch(() => undefined);
void Promise.race([firstPage, new Promise((resolve) => setTimeout(resolve, 200))]).then(() =>
  createRoot(root).render(
    <AppProvider>
      <AppRouter />
    </AppProvider>,
  ),
);
