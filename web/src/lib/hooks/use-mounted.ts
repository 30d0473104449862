import { type RefObject, useEffect, useRef } from "react";

/** Whether the component is still mounted, for code that runs after an await. */
export function useMounted(): RefObject<boolean> {
  const mounted = useRef(true);
  useEffect(() => {
    mounted.current = true;
    return () => {
      mounted.current = false;
    };
  }, []);
  return mounted;
}
