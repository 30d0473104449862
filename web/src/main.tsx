import { createRoot } from "react-dom/client";
import { AppProvider } from "./app/provider.tsx";
import { AppRouter } from "./app/router.tsx";
// Validated on import (through lib/api-clients): an invalid configuration is explained in the page
// and stops the app before anything renders.
import "./config/env.ts";
import "./styles.css";

const root = document.getElementById("root");
if (!root) throw new Error("The page has no #root element.");
createRoot(root).render(
  <AppProvider>
    <AppRouter />
  </AppProvider>,
);
