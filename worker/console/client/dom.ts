/**
 * The only way the console makes DOM: elements by `createElement`, text by text nodes. Attributes
 * are a closed list, so nothing untrusted becomes markup, a handler or a `javascript:` link.
 */
export type Child = Node | string | number | null | undefined | false;

export interface Attrs {
  id?: string;
  class?: string;
  href?: string;
  type?: string;
  name?: string;
  value?: string;
  role?: string;
  for?: string;
  scope?: "col" | "row";
  title?: string;
  placeholder?: string;
  autocomplete?: string;
  method?: string;
  action?: string;
  rows?: number;
  step?: string;
  datetime?: string;
  "aria-label"?: string;
  "aria-describedby"?: string;
  "aria-live"?: "polite" | "assertive" | "off";
  "aria-current"?: string;
  checked?: boolean;
  required?: boolean;
  hidden?: boolean;
  open?: boolean;
  selected?: boolean;
  spellcheck?: boolean;
}

/** Links go to this page's routes or same-origin paths only. */
function safeHref(href: string): string {
  return href.startsWith("#") || (href.startsWith("/") && !href.startsWith("//")) ? href : "#";
}

/** Creates `<tag>` with whitelisted attributes and text or element children. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [key, raw] of Object.entries(attrs) as [keyof Attrs, Attrs[keyof Attrs]][]) {
    if (raw === undefined) continue;
    if (typeof raw === "boolean") {
      // Properties, not attributes: `checked`/`value` reflect what the user sees.
      if (key === "checked" && el instanceof HTMLInputElement) el.checked = raw;
      else if (key === "selected" && el instanceof HTMLOptionElement) el.selected = raw;
      else if (key === "spellcheck") el.spellcheck = raw;
      else if (raw) el.setAttribute(key, "");
      continue;
    }
    if (key === "value" && (el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement)) {
      el.value = String(raw);
      continue;
    }
    el.setAttribute(key, key === "href" ? safeHref(String(raw)) : String(raw));
  }
  append(el, ...children);
  return el;
}

/** Appends children; strings and numbers become text nodes. */
export function append(parent: Node, ...children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === "string" || typeof child === "number" ? text(child) : child);
  }
}

export function text(value: string | number): Text {
  return document.createTextNode(String(value));
}

/** Removes every child of `el` and appends `children` instead. */
export function replace(el: Node, ...children: Child[]): void {
  while (el.firstChild) el.removeChild(el.firstChild);
  append(el, ...children);
}

let counter = 0;
/** A document-unique id, for `label for` and `aria-describedby`. */
export function uid(prefix: string): string {
  counter += 1;
  return `${prefix}-${counter}`;
}

/** A button that runs `onClick`; `label` is its accessible name (its text). */
export function button(label: string, onClick: (event: MouseEvent) => void, cls?: string): HTMLButtonElement {
  const el = h("button", { type: "button", class: cls });
  el.textContent = label;
  el.addEventListener("click", onClick);
  return el;
}

/**
 * A button in a table row: it shows `verb` and is named `verb subject` ("Drain host-1"), so the
 * row's id is read once in the row and every button still says what it acts on.
 */
export function rowButton(
  verb: string,
  subject: string,
  onClick: (event: MouseEvent) => void,
  cls?: string,
): HTMLButtonElement {
  const el = button(verb, onClick, cls);
  el.setAttribute("aria-label", `${verb} ${subject}`);
  return el;
}

/** `control` with a `<label>` naming it and an optional hint read as its description. */
export function labelled<T extends HTMLElement>(label: string, control: T, hint?: string): HTMLElement {
  control.id ||= uid("field");
  const hintEl = hint ? h("small", { id: uid("hint"), class: "hint" }, hint) : null;
  if (hintEl) control.setAttribute("aria-describedby", hintEl.id);
  return h("div", { class: "field" }, h("label", { for: control.id }, label), control, hintEl);
}

/** `<a href>` whose accessible name is its text. */
export function link(label: string, href: string): HTMLAnchorElement {
  return h("a", { href }, label);
}
