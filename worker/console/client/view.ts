import { h } from "./dom.js";
import type { Scope } from "./live.js";

/**
 * A view renders into its own `root` (a fresh section per navigation) and keeps its timers and
 * streams in `scope`, which the router disposes when the person goes elsewhere.
 */
export interface ViewContext {
  root: HTMLElement;
  scope: Scope;
  /** Moves to another route (after a create, a spawn). */
  navigate(hash: string): void;
}

export type View = (ctx: ViewContext, ...params: string[]) => void;

/** The view's one `<h1>`. */
export function heading(title: string): HTMLHeadingElement {
  return h("h1", {}, title);
}
