// Types for scripts/build.mjs (the emulator's bundle, built when an input changed).

export interface BuildLayout {
  /** The workspace folder (mock-server/) whose src/ is built into dist/; the default is this one. */
  root?: string;
}

/**
 * Whether dist/ holds the last build's outputs and none of its inputs changed since: "unchanged"
 * (told by the inputs' sizes and modification times alone), "same contents" (a size or time
 * differs, the contents do not; the times are kept for the next check) or "changed".
 */
export declare function bundleState(options?: BuildLayout): "unchanged" | "same contents" | "changed";

/** True when dist/ holds the last build's outputs and none of its inputs changed since. */
export declare function bundleIsFresh(options?: BuildLayout): boolean;

/** Builds dist/ when an input changed since the last build (always with `force`); true if it built. */
export declare function buildBundle(options?: BuildLayout & { force?: boolean }): Promise<boolean>;

/**
 * The fixes of patches/ that the installed dependencies lack (every line a patch adds must be in
 * the file it patches), one message each; a build refuses to run while there are any.
 */
export declare function unappliedPatches(repo?: string): string[];
