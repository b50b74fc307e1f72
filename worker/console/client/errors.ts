import { ApiError } from "./api.js";
import { h, replace } from "./dom.js";

/**
 * "Call and show the error": a place next to a control where a failed call's message appears as
 * a `role="alert"` (created only when there is something to say, so an idle page has no alerts).
 */
export interface ErrorSlot {
  readonly el: HTMLElement;
  show(message: string): void;
  clear(): void;
}

export function errorSlot(): ErrorSlot {
  const el = h("div", { class: "error-slot" });
  return {
    el,
    show: (message) => replace(el, h("p", { role: "alert", class: "error" }, message)),
    clear: () => replace(el),
  };
}

/** The message a person should read for a failure. */
export function messageOf(err: unknown): string {
  if (err instanceof ApiError) return err.message;
  return err instanceof Error ? err.message : String(err);
}

/**
 * Runs `work` on behalf of `controls`: they are disabled meanwhile (no double submit), the slot
 * is cleared first and shows the server's message on failure. Answers the result, or undefined
 * when it failed. A 401 shows nothing here: the whole app is being torn down.
 */
export async function guarded<T>(
  slot: ErrorSlot,
  work: () => Promise<T>,
  controls: readonly (HTMLButtonElement | HTMLInputElement | HTMLSelectElement)[] = [],
): Promise<T | undefined> {
  slot.clear();
  for (const control of controls) control.disabled = true;
  try {
    return await work();
  } catch (err) {
    if (!(err instanceof ApiError && err.code === "unauthorized")) slot.show(messageOf(err));
    return undefined;
  } finally {
    for (const control of controls) control.disabled = false;
  }
}
