import { type Principal, readPrincipal, readsAdministration, setPrincipal } from "./access.js";
import { csrfToken, fetchMe, onSignInEnded } from "./api.js";
import { h, replace } from "./dom.js";
import { rootScope, type Scope } from "./live.js";
import { heading, type View } from "./view.js";
import { auditView } from "./views/audit.js";
import { filesView } from "./views/files.js";
import { hostsView } from "./views/hosts.js";
import { jobsView } from "./views/jobs.js";
import { projectView } from "./views/project.js";
import { projectsView } from "./views/projects.js";
import { schedulesView } from "./views/schedules.js";
import { sessionView } from "./views/session.js";
import { sessionsView } from "./views/sessions.js";
import { tokensView } from "./views/tokens.js";
import { usageView } from "./views/usage.js";

/**
 * The console's entry: reads who is signed in, builds the header and its navigation, routes the
 * hash to a view, and watches the sign-in (`/console/api/me` every second): when it ends, every
 * timer and stream stops and only a notice is left.
 */
const ME_POLL_MS = 1_000;

interface Route {
  pattern: RegExp;
  view: View;
  title: string;
}

const ROUTES: Route[] = [
  { pattern: /^\/sessions$/, view: sessionsView, title: "Sessions" },
  { pattern: /^\/sessions\/([A-Za-z0-9_-]+)$/, view: sessionView, title: "Session" },
  { pattern: /^\/projects$/, view: projectsView, title: "Projects" },
  { pattern: /^\/projects\/([A-Za-z0-9_-]+)$/, view: projectView, title: "Project" },
  {
    // `?path=<dir>` or `?file=<path>`; the value runs to the end (the hash is decoded as a whole).
    pattern: /^\/projects\/([A-Za-z0-9_-]+)\/files\/([A-Za-z0-9_-]+)(?:\?(path|file)=([\s\S]*))?$/,
    view: filesView,
    title: "Files",
  },
  { pattern: /^\/hosts$/, view: hostsView, title: "Hosts" },
  { pattern: /^\/jobs$/, view: jobsView, title: "Jobs" },
  { pattern: /^\/schedules$/, view: schedulesView, title: "Schedules" },
  { pattern: /^\/usage$/, view: usageView, title: "Usage" },
  { pattern: /^\/tokens$/, view: tokensView, title: "Tokens" },
  { pattern: /^\/audit$/, view: auditView, title: "Audit" },
];

/** Navigation entries; the administration is left out for project-scoped people. */
function navItems(): { label: string; path: string }[] {
  const admin = readsAdministration();
  return [
    { label: "Sessions", path: "/sessions" },
    { label: "Projects", path: "/projects" },
    ...(admin ? [{ label: "Hosts", path: "/hosts" }] : []),
    { label: "Jobs", path: "/jobs" },
    { label: "Schedules", path: "/schedules" },
    { label: "Usage", path: "/usage" },
    ...(admin
      ? [
          { label: "Tokens", path: "/tokens" },
          { label: "Audit", path: "/audit" },
        ]
      : []),
  ];
}

function currentPath(): string {
  let path: string;
  try {
    path = decodeURIComponent(location.hash.replace(/^#/, ""));
  } catch {
    path = "";
  }
  return path === "" || path === "/" ? "/sessions" : path;
}

function buildHeader(header: HTMLElement, who: Principal): HTMLElement {
  const nav = h(
    "nav",
    { "aria-label": "Console" },
    h("ul", {}, ...navItems().map((item) => h("li", {}, h("a", { href: `#${item.path}` }, item.label)))),
  );
  const signOut = h(
    "form",
    { method: "post", action: "/console/signout", class: "signout" },
    h("input", { type: "hidden", name: "csrf", value: csrfToken() }),
    h("button", { type: "submit" }, "Sign out"),
  );
  replace(
    header,
    h("div", { class: "brand" }, "Oubliette Edge"),
    nav,
    h("div", { class: "who" }, h("code", {}, who.token_id), ` ${who.scopes.join(", ")}`),
    signOut,
  );
  return nav;
}

function markCurrent(nav: HTMLElement, path: string): void {
  for (const a of nav.querySelectorAll("a")) {
    const target = a.getAttribute("href")?.slice(1) ?? "";
    if (path === target || path.startsWith(`${target}/`)) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
}

function start(who: Principal, header: HTMLElement, main: HTMLElement): void {
  setPrincipal(who);
  const nav = buildHeader(header, who);
  let viewScope: Scope | null = null;

  const render = () => {
    if (rootScope.disposed) return;
    viewScope?.dispose();
    viewScope = rootScope.child();
    const path = currentPath();
    markCurrent(nav, path);
    const root = h("section", { class: "view" });
    replace(main, root);
    for (const route of ROUTES) {
      const match = route.pattern.exec(path);
      if (!match) continue;
      document.title = `${route.title} · Oubliette Edge`;
      route.view({ root, scope: viewScope, navigate }, ...match.slice(1));
      return;
    }
    document.title = "Not found · Oubliette Edge";
    root.append(
      heading("Not found"),
      h("p", {}, "No such page. ", h("a", { href: "#/sessions" }, "Sessions")),
    );
  };
  const navigate = (hash: string) => {
    if (location.hash === hash) render();
    else location.hash = hash;
  };

  window.addEventListener("hashchange", render);
  rootScope.add(() => window.removeEventListener("hashchange", render));
  rootScope.every(ME_POLL_MS, async () => {
    // A network blip is not a sign-out: only a 401 ends the app.
    const me = await fetchMe().catch(() => undefined);
    if (me === null) signInEnded();
  });
  render();
}

let ended = false;

/** The sign-in ended (revoked, expired, signed out elsewhere): stop everything, say so, offer a way back. */
function signInEnded(): void {
  if (ended) return;
  ended = true;
  rootScope.dispose();
  const header = document.querySelector("header");
  if (header) replace(header);
  const main = document.getElementById("app") ?? document.body;
  replace(
    main,
    h("p", { role: "alert" }, "Your sign-in ended."),
    h("p", {}, h("a", { href: "/" }, "Sign in again")),
  );
  document.title = "Signed out · Oubliette Edge";
}

async function boot(): Promise<void> {
  onSignInEnded(signInEnded);
  const main = document.getElementById("app") ?? document.body.appendChild(h("main", { id: "app" }));
  let header = document.querySelector("header");
  if (!header) {
    header = h("header");
    document.body.prepend(header);
  }
  const who = readPrincipal() ?? (await fetchMe().catch(() => null));
  if (who === null) {
    signInEnded();
    return;
  }
  start(who, header, main);
}

void boot();
