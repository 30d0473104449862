import { useEffect, useState } from "react";
import { useSearch } from "wouter";

/**
 * The `token` and `tokenId` of an e-mail's link (`/confirm?…`, `/reset-password?…`), read once when
 * the page opens; then taken out of the address, so the tab's history and its address bar do not
 * keep a link that may still be good (a reset link for 30 minutes). The page keeps them meanwhile;
 * a reload asks for the link from the e-mail again.
 */
export function useLinkToken(): { token: string | null; tokenId: string | null } {
  const search = useSearch();
  const [pair] = useState(() => {
    const params = new URLSearchParams(search);
    return { token: params.get("token"), tokenId: params.get("tokenId") };
  });
  useEffect(() => {
    if (pair.token === null && pair.tokenId === null) return;
    const url = new URL(window.location.href);
    url.searchParams.delete("token");
    url.searchParams.delete("tokenId");
    window.history.replaceState(window.history.state, "", `${url.pathname}${url.search}${url.hash}`);
  }, [pair]);
  return pair;
}
