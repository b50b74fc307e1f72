/** Types of scripts/toolchain-node.mjs (plain JS: it may start on a Node older than the toolchain's). */
export declare const TOOLCHAIN_MINIMUM: string;
export declare function newEnough(version: string): boolean;
export declare function chooseNode(
  machineNode: string,
  pinnedNode?: string,
):
  | { node: string; note: string | null; error?: undefined }
  | { error: string; node?: undefined; note?: undefined };
