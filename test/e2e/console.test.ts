/**
 * The operator console end to end: the Worker under wrangler dev, two real host-agents (Docker,
 * and a second for draining), the scripted droid in its container, a real Chromium through
 * playwright-core driving the page by roles and accessible names, and the official MCP SDK client
 * as the caller whose droid the page watches. Asserted on what the page shows, on what the droid
 * was told, and on the container's files. Saves screenshots of the main pages (see SCREENSHOTS).
 */
import { mkdirSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import Dockerode from "dockerode";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import type { ApprovalPolicy } from "../../protocol/approvals.js";
import type { HostAgent } from "../../scripts/stack/host-agent-process.js";
import { launchBrowser } from "../support/browser.js";
import { TestCaller } from "../support/caller.js";
import { dockerContext } from "../support/docker-context.js";
import { execAs, projectContainer } from "../support/docker-exec.js";
import { TestStack } from "../support/stack.js";
import { followUntilReady, runStep, runSteps, SEND_RESPONSE, text } from "./support.js";

/**
 * Where the screenshots go: .oubliette/console-screenshots (not committed) unless
 * OUBLIETTE_CONSOLE_SCREENSHOTS names another directory (docs/console refreshes the README's).
 */
const SCREENSHOTS = pathToFileURL(
  `${resolve(process.env.OUBLIETTE_CONSOLE_SCREENSHOTS ?? new URL("../../.oubliette/console-screenshots", import.meta.url).pathname)}/`,
);
const docker = new Dockerode({ socketPath: dockerContext().dockerSocket });

let stack: TestStack;
let dockerHost: HostAgent;
let otherHost: HostAgent;
let caller: TestCaller;
let browser: Browser;
let admin: Page;

const SHELL_ASKS: ApprovalPolicy = { rules: [{ kind: "shell", action: "ask" }], default: "allow" };
const NETWORK_ASKS: ApprovalPolicy = { rules: [{ kind: "network", action: "ask" }], default: "allow" };

/**
 * Names the Docker host's gate maps to this machine's loopback (its test flag), where `web`
 * answers: the droid's requests to them go through the gate as to any host on the internet.
 */
const WEB = "web.oubliette.test";
const OTHER = "other.oubliette.test";
let web: Server;
let webPort = 0;
const webSeen: string[] = [];

beforeAll(async () => {
  web = createServer((req, res) => {
    webSeen.push(`${req.headers.host ?? ""}${req.url ?? ""}`);
    res.writeHead(200, { "content-type": "text/plain" });
    res.end("hello from the web\n");
  });
  await new Promise<void>((done) => web.listen(0, "127.0.0.1", done));
  webPort = (web.address() as { port: number }).port;
  stack = await TestStack.start();
  dockerHost = await stack.addHost({
    runtime: "docker",
    image: dockerContext().droidImage,
    extraEnv: { OUBLIETTE_EGRESS_TEST_RESOLVE: `${WEB}=127.0.0.1,${OTHER}=127.0.0.1` },
  });
  caller = await TestCaller.connect(stack.mcpUrl, stack.adminToken);
  browser = await launchBrowser();
  admin = await signIn(stack.adminToken);
  mkdirSync(SCREENSHOTS, { recursive: true });
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await caller?.close();
  await stack?.stop();
  web?.close();
});

/** A fresh browser context signed in with `token` through the console's sign-in page. */
async function signIn(token: string): Promise<Page> {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(stack.url);
  await page.getByLabel("API token").fill(token);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("navigation", { name: "Console" }).waitFor();
  return page;
}

async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: new URL(`${name}.png`, SCREENSHOTS).pathname, fullPage: true });
}

async function workspaceHas(projectId: string, file: string): Promise<boolean> {
  const container = await projectContainer(docker, projectId);
  const path = `/workspace/default/${file}`;
  const found = await execAs(container, "0", [
    "sh",
    "-c",
    'if [ -e "$1" ]; then echo yes; else echo no; fi',
    "sh",
    path,
  ]);
  if (found.code !== 0 || !/^(yes|no)$/.test(found.out.trim()))
    throw new Error(`could not check ${path}: ${found.out}`);
  return found.out.trim() === "yes";
}

async function newProject(extra: Record<string, unknown> = {}): Promise<string> {
  const created = await caller.ok<{ project_id: string }>("project", {
    action: "create",
    name: `console-${crypto.randomUUID().slice(0, 8)}`,
    ...extra,
  });
  return created.project_id;
}

/** A droid session the MCP caller spawned (with its caller tool) and follows. */
async function droidIn(projectId: string): Promise<string> {
  const { session_id } = await caller.ok<{ session_id: string }>("session", {
    action: "spawn",
    project_id: projectId,
    new_session: true,
    caller_id: "ant",
    caller_tools: [SEND_RESPONSE],
  });
  await followUntilReady(caller, session_id, "ant", [SEND_RESPONSE]);
  return session_id;
}

/** Runs curl in the session's droid (as its agent's shell would): the HTTP status it got. */
async function curl(sessionId: string, url: string): Promise<string> {
  const out = await runStep(
    caller,
    sessionId,
    { op: "exec", argv: ["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", url], timeout_ms: 80_000 },
    90_000,
  );
  return String(out.stdout ?? "");
}

function events(page: Page) {
  return page.getByRole("list", { name: "Events" });
}

/** Waits for `wait`; when it fails, the error carries the page's event lines (what happened instead). */
async function showingEvents<T>(page: Page, wait: Promise<T>): Promise<T> {
  try {
    return await wait;
  } catch (err) {
    throw new Error(
      `${String(err)}\nthe session's events:\n${(await events(page).allTextContents()).join("\n")}`,
    );
  }
}

/** The event lines holding `text` that the droid printed (not the message that told it to). */
function droidSaid(page: Page, text: string) {
  return events(page).getByRole("listitem").filter({ hasText: text }).filter({ hasNotText: "message sent" });
}

describe("signed in as an admin", () => {
  let projectName = "";
  let projectId = "";
  let sessionId = "";

  it("creates a project from the form built from project options", async () => {
    projectName = `console-made-${crypto.randomUUID().slice(0, 6)}`;
    await admin.getByRole("link", { name: "Projects" }).click();
    await admin.getByRole("heading", { name: "Projects", level: 1 }).waitFor();
    await admin.getByRole("button", { name: "New project" }).click();
    const form = admin.getByRole("form", { name: "New project" });
    await form.getByLabel("name", { exact: true }).fill(projectName);
    await screenshot(admin, "new-project");
    await form.getByRole("button", { name: "Create project" }).click();
    await admin.getByRole("heading", { name: projectName, level: 1 }).waitFor();
    const listed = await caller.ok<{ projects: { project_id: string; name: string }[] }>("project", {
      action: "list",
    });
    projectId = listed.projects.find((p) => p.name === projectName)?.project_id ?? "";
    expect(projectId).not.toBe("");
    expect(admin.url()).toContain(projectId);
  });

  it("starts a scripted session from the project page; what the droid says appears live", async () => {
    await admin
      .getByRole("form", { name: "New session" })
      .getByRole("button", { name: "Start session" })
      .click();
    const heading = admin.getByRole("heading", { name: /^Session ses_/, level: 1 });
    await heading.waitFor({ timeout: 60_000 });
    sessionId = ((await heading.textContent()) ?? "").replace("Session ", "").trim();
    expect(sessionId).toMatch(/^ses_[0-9a-f]{24}$/);
    const script = { id: "hello", steps: [{ op: "echo", text: "hello from the droid" }] };
    await admin.getByLabel("Message").fill(JSON.stringify(script));
    await admin.getByRole("button", { name: "Send", exact: true }).click();
    await droidSaid(admin, "hello from the droid").first().waitFor({ timeout: 60_000 });
    // The MCP side sees the same session's output: one session, two views.
    const page = await caller.ok<{ events: { type: string; data?: unknown; text?: string }[] }>("session", {
      action: "events",
      session_id: sessionId,
    });
    expect(JSON.stringify(page.events)).toContain("hello from the droid");
    await screenshot(admin, "session");
  });

  it("after a reload the events come back once each, and new ones keep arriving", async () => {
    await admin.reload();
    await droidSaid(admin, "hello from the droid").first().waitFor();
    const script = { id: "again", steps: [{ op: "echo", text: "after the reload" }] };
    await admin.getByLabel("Message").fill(JSON.stringify(script));
    await admin.getByRole("button", { name: "Send", exact: true }).click();
    await droidSaid(admin, "after the reload").first().waitFor({ timeout: 30_000 });
    expect(await droidSaid(admin, "hello from the droid").count()).toBe(1);
    expect(await droidSaid(admin, "after the reload").count()).toBe(1);
  });

  it("shows agent output holding <script> and HTML as text, running none of it", async () => {
    const hostile = `<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2"><b id="bold">bold</b>`;
    const script = { id: "hostile", steps: [{ op: "echo", text: hostile }] };
    await admin.getByLabel("Message").fill(JSON.stringify(script));
    await admin.getByRole("button", { name: "Send", exact: true }).click();
    await events(admin)
      .getByText('<b id="bold">bold</b>', { exact: false })
      .first()
      .waitFor({ timeout: 30_000 });
    expect(await admin.evaluate("window.__pwned")).toBeUndefined();
    expect(await admin.locator("#bold").count()).toBe(0);
    expect(await events(admin).locator("img, script").count()).toBe(0);
  });

  it("interrupts the turn in flight: the rest of its steps never run", async () => {
    const script = {
      id: "slow",
      steps: [
        { op: "sleep", ms: 60_000 },
        { op: "echo", text: "after the long sleep" },
      ],
    };
    await admin.getByLabel("Message").fill(JSON.stringify(script));
    await admin.getByRole("button", { name: "Send", exact: true }).click();
    await events(admin).getByText('"sleep"', { exact: false }).first().waitFor({ timeout: 30_000 });
    await admin.getByRole("button", { name: "Interrupt" }).click();
    await events(admin).getByText("interrupted").first().waitFor({ timeout: 30_000 });
    await admin.waitForTimeout(1_000);
    expect(await droidSaid(admin, "after the long sleep").count()).toBe(0);
  });

  it("answers a caller tool request from the page; the droid receives the answer", async () => {
    const id = await droidIn(projectId);
    await admin.goto(`${stack.url}/#/sessions/${id}`);
    await admin.getByRole("heading", { name: `Session ${id}` }).waitFor();
    const call = runStep(
      caller,
      id,
      { op: "call", name: "ant_send_response", arguments: { message: "hi" } },
      90_000,
    );
    const request = admin.getByRole("article", { name: /^Caller tool request / });
    await request.waitFor({ timeout: 30_000 });
    expect(await request.textContent()).toContain("send_response");
    await request
      .getByLabel("Result (JSON)")
      .fill(JSON.stringify({ content: [{ type: "text", text: "answered in the browser" }] }));
    await screenshot(admin, "caller-tool-request");
    await request.getByRole("button", { name: "Send result" }).click();
    const out = await call;
    expect(out.is_error).toBe(false);
    expect(text(out)).toBe("answered in the browser");
    await request.waitFor({ state: "detached", timeout: 10_000 });
  });

  describe("approvals", () => {
    let approvalsProject = "";
    let approvalsSession = "";

    beforeAll(async () => {
      approvalsProject = await newProject({ approval_policy: SHELL_ASKS });
      approvalsSession = await droidIn(approvalsProject);
      await admin.goto(`${stack.url}/#/sessions/${approvalsSession}`);
      await admin.getByRole("heading", { name: `Session ${approvalsSession}` }).waitFor();
    }, 120_000);

    function ask(command: string) {
      return runSteps(
        caller,
        approvalsSession,
        [{ op: "ask", request: { kind: "shell", command, summary: `run ${command}` } }],
        90_000,
      );
    }

    it("allow: the page shows the exact command; once allowed it runs", async () => {
      const outputs = ask("touch allowed-in-browser.txt");
      const approval = admin.getByRole("article", { name: /^Approval / });
      await approval.waitFor({ timeout: 30_000 });
      expect(await approval.textContent()).toContain("touch allowed-in-browser.txt");
      expect(await workspaceHas(approvalsProject, "allowed-in-browser.txt")).toBe(false);
      await screenshot(admin, "approval");
      // Only a network request can be allowed for the whole project.
      expect(await approval.getByRole("button", { name: "Allow for project" }).count()).toBe(0);
      await approval.getByRole("button", { name: "Allow once" }).click();
      const decision = (await outputs).find((o) => o.op === "approval");
      expect(decision).toMatchObject({ decision: "allow", by: "answer" });
      expect(await workspaceHas(approvalsProject, "allowed-in-browser.txt")).toBe(true);
      await approval.waitFor({ state: "detached", timeout: 10_000 });
    });

    it("deny with a message: the agent is told, and the command never runs", async () => {
      const outputs = ask("touch denied-in-browser.txt");
      const approval = admin.getByRole("article", { name: /^Approval / });
      await approval.waitFor({ timeout: 30_000 });
      await approval.getByLabel("Message for the agent").fill("not from the console");
      await approval.getByRole("button", { name: "Deny" }).click();
      const decision = (await outputs).find((o) => o.op === "approval");
      expect(decision).toMatchObject({ decision: "deny", by: "answer", message: "not from the console" });
      expect(await workspaceHas(approvalsProject, "denied-in-browser.txt")).toBe(false);
    });

    it("allow for session: the same kind is not asked again", async () => {
      const first = ask("touch session-1.txt");
      const approval = admin.getByRole("article", { name: /^Approval / });
      await approval.waitFor({ timeout: 30_000 });
      await approval.getByRole("button", { name: "Allow for session" }).click();
      expect((await first).find((o) => o.op === "approval")).toMatchObject({
        decision: "allow",
        by: "answer",
      });
      const second = (await ask("touch session-2.txt")).find((o) => o.op === "approval");
      expect(second).toMatchObject({ decision: "allow", by: "session_allowance" });
      expect(await workspaceHas(approvalsProject, "session-2.txt")).toBe(true);
    });
  });

  describe("network and setup", () => {
    let settingsProject = "";

    it("edits a project's network and setup in the settings form; project get shows the new values", async () => {
      settingsProject = await newProject();
      await admin.goto(`${stack.url}/#/projects/${settingsProject}`);
      await admin.getByRole("button", { name: "Edit settings" }).click();
      const form = admin.getByRole("form", { name: "Project settings" });
      const network = form.getByRole("group", { name: "network", exact: true });
      await network.getByLabel("mode").selectOption("allowlist");
      await network.getByLabel("allow").fill("registry.npmjs.org\n*.example.com:443\n");
      await network.getByRole("checkbox", { name: "package-registries" }).check();
      const methods = network.getByRole("group", { name: "methods" });
      await methods.getByRole("checkbox", { name: "GET", exact: true }).check();
      await methods.getByRole("checkbox", { name: "CONNECT", exact: true }).check();
      // One step per line; a JSON array of strings is an argv.
      // (The droid image has no echo binary: an argv runs node.)
      await form
        .getByLabel("setup", { exact: true })
        .fill(`echo first step\n["node","-e","console.log('argv step')"]`);
      await form
        .getByRole("group", { name: "setup_network", exact: true })
        .getByLabel("mode")
        .selectOption("off");
      await screenshot(admin, "project-settings");
      await form.getByRole("button", { name: "Save settings" }).click();
      await admin.getByRole("status").filter({ hasText: "Settings saved." }).waitFor({ timeout: 10_000 });
      const saved = await caller.ok<Record<string, unknown>>("project", {
        action: "get",
        project_id: settingsProject,
      });
      expect(saved.network).toEqual({
        mode: "allowlist",
        allow: ["registry.npmjs.org", "*.example.com:443"],
        presets: ["package-registries"],
        methods: ["GET", "CONNECT"],
      });
      expect(saved.setup).toEqual(["echo first step", ["node", "-e", "console.log('argv step')"]]);
      expect(saved.setup_network).toEqual({ mode: "off", allow: [], presets: ["package-registries"] });
      // What was left alone stays as it was.
      expect(saved.approval_policy).toBe("auto");

      // A bad entry: the server's message names it, next to the form, and nothing changes.
      await admin.getByRole("button", { name: "Edit settings" }).click();
      expect(await network.getByLabel("allow").inputValue()).toBe("registry.npmjs.org\n*.example.com:443");
      await network.getByLabel("allow").fill("good.example.com\nbad host");
      await form.getByLabel("setup", { exact: true }).fill("echo never saved");
      await form.getByRole("button", { name: "Save settings" }).click();
      const refusal = form.getByRole("alert");
      await refusal.waitFor({ timeout: 10_000 });
      expect(await refusal.textContent()).toContain("network.allow.1: bad host is not a host name");
      const after = await caller.ok<Record<string, unknown>>("project", {
        action: "get",
        project_id: settingsProject,
      });
      expect(after.network).toEqual(saved.network);
      expect(after.setup).toEqual(saved.setup);
      await admin.getByRole("button", { name: "Cancel" }).click();
    });

    it("a session started from the page shows its setup: each step, its output folded, how it ended", async () => {
      await admin
        .getByRole("form", { name: "New session" })
        .getByRole("button", { name: "Start session" })
        .click();
      await admin.getByRole("heading", { name: /^Session ses_/, level: 1 }).waitFor({ timeout: 60_000 });
      const setup = admin.getByRole("region", { name: "Setup" });
      const outcome = setup.getByRole("status");
      await showingEvents(
        admin,
        outcome.filter({ hasText: /^setup (finished|failed)/ }).waitFor({ timeout: 60_000 }),
      );
      expect(await outcome.textContent()).toMatch(/^setup finished in \d+\.\d s: 2 step\(s\) done$/);
      const steps = setup.getByRole("list", { name: "Setup steps" }).getByRole("listitem");
      expect(await steps.count()).toBe(2);
      expect(await steps.nth(0).textContent()).toContain("echo first step — done");
      expect(await steps.nth(1).textContent()).toContain("node -e console.log('argv step') — done");
      const output = steps.nth(1).getByRole("group");
      expect(await output.getByText("argv step", { exact: true }).isVisible()).toBe(false);
      await output.getByText(/^Output/).click();
      await output.getByText("argv step", { exact: true }).waitFor();
      await screenshot(admin, "setup");
    });

    it("a network approval answered with Allow for project: the request passes, the allowlist holds the host, and the page lists it", async () => {
      const project = await newProject({
        network: { mode: "allowlist", allow: [] },
        approval_policy: NETWORK_ASKS,
      });
      const session = await droidIn(project);
      await admin.goto(`${stack.url}/#/sessions/${session}`);
      await admin.getByRole("heading", { name: `Session ${session}` }).waitFor();
      const approval = admin.getByRole("article", { name: /^Approval / });

      // First a host a person refuses.
      const refused = curl(session, `http://${OTHER}:${webPort}/refused`);
      await showingEvents(admin, approval.waitFor({ timeout: 30_000 }));
      expect(await approval.textContent()).toContain(`GET ${OTHER}:${webPort}`);
      await approval.getByLabel("Message for the agent").fill("not that host");
      await approval.getByRole("button", { name: "Deny" }).click();
      expect(await refused).toBe("403");
      await approval.waitFor({ state: "detached", timeout: 10_000 });

      // Then one allowed for the project.
      const allowed = curl(session, `http://${WEB}:${webPort}/for-the-project`);
      await showingEvents(admin, approval.waitFor({ timeout: 30_000 }));
      expect(await approval.getByRole("heading").textContent()).toBe(
        `Approval: network, GET ${WEB}:${webPort}`,
      );
      for (const name of ["Allow once", "Allow for session", "Allow for project", "Deny"])
        expect(await approval.getByRole("button", { name, exact: true }).count()).toBe(1);
      await screenshot(admin, "network-approval");
      await approval.getByRole("button", { name: "Allow for project" }).click();
      expect(await allowed).toBe("200");
      expect(webSeen).toContain(`${WEB}:${webPort}/for-the-project`);
      expect(webSeen.some((seen) => seen.endsWith("/refused"))).toBe(false);
      await expect
        .poll(
          async () =>
            (
              await caller.ok<{ network: { allow: string[] } }>("project", {
                action: "get",
                project_id: project,
              })
            ).network.allow,
          { timeout: 10_000 },
        )
        .toEqual([`${WEB}:${webPort}`]);

      // The session's page lists the host it reached, and the connection refused before.
      const hosts = admin.getByRole("table", { name: "Allowed hosts" });
      const reached = hosts.getByRole("row").filter({ hasText: `${WEB}:${webPort}` });
      await reached.waitFor({ timeout: 15_000 });
      expect(await reached.getByRole("cell").nth(1).textContent()).toBe("1");
      expect(await hosts.getByRole("row").filter({ hasText: OTHER }).count()).toBe(0);
      const blocked = admin
        .getByRole("table", { name: "Blocked connections" })
        .getByRole("row")
        .filter({ hasText: `${OTHER}:${webPort}` });
      await blocked.waitFor({ timeout: 15_000 });
      const cells = await blocked.getByRole("cell").allTextContents();
      expect(cells.slice(1, 3)).toEqual([`${OTHER}:${webPort}`, "GET"]);
      expect(cells[3]).toContain("approval: ");
      expect(cells[3]).toContain("not that host");
      await screenshot(admin, "network");
    });
  });

  it("runs a command in the project's container and shows its output", async () => {
    await admin.goto(`${stack.url}/#/projects/${projectId}`);
    await admin.getByRole("heading", { name: projectName, level: 1 }).waitFor();
    const form = admin.getByRole("form", { name: "Run a command" });
    // Split on whitespace into argv; what it prints is computed, so it proves the command ran.
    await form.getByLabel("Command").fill('node -e console.log(["console","exec","ok"].join("-"))');
    await form.getByRole("button", { name: "Run" }).click();
    await expect
      .poll(async () => admin.getByLabel("Command output").textContent(), { timeout: 60_000 })
      .toContain("console-exec-ok");
  }, 120_000);

  it("creates a token (shown once) and revokes it from the page", async () => {
    await admin.getByRole("link", { name: "Tokens" }).click();
    const form = admin.getByRole("form", { name: "New token" });
    await form.getByLabel("name", { exact: true }).fill("made-in-the-console");
    await form.getByLabel("scope", { exact: true }).fill(`project:${projectId}:ro`);
    await form.getByRole("button", { name: "Create token" }).click();
    const shown = admin.getByRole("status").filter({ hasText: "Shown once" });
    await shown.waitFor({ timeout: 10_000 });
    const secret = /oub_[0-9a-f]{64}/.exec((await shown.textContent()) ?? "")?.[0] ?? "";
    expect(secret).not.toBe("");
    const listed = await caller.ok<{ tokens: { token_id: string; name: string; status: string }[] }>(
      "token",
      {
        action: "list",
      },
    );
    const made = listed.tokens.find((t) => t.name === "made-in-the-console");
    expect(made?.status).toBe("active");
    await admin.getByRole("button", { name: `Revoke ${made?.token_id}` }).click();
    await expect
      .poll(
        async () => {
          const all = await caller.ok<{ tokens: { token_id: string; status: string }[] }>("token", {
            action: "list",
            include_revoked: true,
          });
          return all.tokens.find((t) => t.token_id === made?.token_id)?.status;
        },
        { timeout: 10_000 },
      )
      .toBe("revoked");
    // The secret it showed once no longer works.
    const refused = await fetch(stack.mcpUrl, {
      method: "POST",
      headers: {
        authorization: `Bearer ${secret}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
    });
    expect(refused.status).toBe(401);
  });

  it("triggers and disables a schedule from the page", async () => {
    const name = `console-schedule-${crypto.randomUUID().slice(0, 6)}`;
    const { schedule_id } = await caller.ok<{ schedule_id: string }>("schedule", {
      action: "create",
      name,
      cron_expr: "0 3 1 1 *",
      prompt: JSON.stringify({ id: "scheduled", steps: [{ op: "echo", text: "scheduled run" }] }),
      targets: [{ project_id: projectId }],
    });
    await admin.getByRole("link", { name: "Schedules" }).click();
    await admin.getByRole("table", { name: "Schedules" }).getByText(name).waitFor({ timeout: 10_000 });
    await admin.getByRole("button", { name: `Trigger ${name}` }).click();
    await expect
      .poll(
        async () => {
          const history = await caller.ok<{ runs: unknown[] }>("schedule", {
            action: "history",
            schedule_id,
          });
          return history.runs.length;
        },
        { timeout: 30_000 },
      )
      .toBeGreaterThan(0);
    await admin.getByRole("button", { name: `Disable ${name}` }).click();
    await expect
      .poll(
        async () =>
          (await caller.ok<{ enabled: boolean }>("schedule", { action: "get", schedule_id })).enabled,
        {
          timeout: 10_000,
        },
      )
      .toBe(false);
    await admin.getByRole("button", { name: `Enable ${name}` }).waitFor({ timeout: 10_000 });
  });

  it("lists jobs and shows usage", async () => {
    await admin.getByRole("link", { name: "Jobs" }).click();
    await admin.getByRole("heading", { name: "Jobs", level: 1 }).waitFor();
    await admin.getByRole("table", { name: "Jobs" }).waitFor();
    await admin.getByRole("link", { name: "Usage" }).click();
    await admin.getByRole("heading", { name: "Usage", level: 1 }).waitFor();
    await admin.getByRole("combobox", { name: "Period" }).selectOption({ label: "Last 7 days" });
    // The scripted droid calls no model: the period is empty, and says so.
    await admin.getByText("No model use in this period.").waitFor({ timeout: 10_000 });
    await screenshot(admin, "usage");
  });

  it("enrols a host: the page shows the command that starts it, with its token, once", async () => {
    await admin.getByRole("link", { name: "Hosts" }).click();
    const form = admin.getByRole("form", { name: "Enrol a host" });
    await form.getByLabel("Host id").fill("console-enrolled");
    await form.getByRole("button", { name: "Enrol a host" }).click();
    const shown = admin.getByLabel("Host enrolment");
    await expect
      .poll(async () => shown.textContent(), { timeout: 10_000 })
      .toMatch(/OUBLIETTE_HOST_TOKEN=oub_[0-9a-f]{64}/);
    expect(await shown.textContent()).toContain("console-enrolled");
  });

  it("ends a session from its page", async () => {
    await admin.goto(`${stack.url}/#/sessions/${sessionId}`);
    await admin.getByRole("button", { name: "End session" }).click();
    await expect
      .poll(
        async () =>
          (await caller.ok<{ status: string }>("session", { action: "get", session_id: sessionId })).status,
        {
          timeout: 20_000,
        },
      )
      .toBe("ended");
  });

  it("lists sessions across projects", async () => {
    await admin.getByRole("link", { name: "Sessions" }).click();
    const table = admin.getByRole("table", { name: "Sessions" });
    await table.getByRole("link", { name: sessionId }).waitFor({ timeout: 10_000 });
    await screenshot(admin, "sessions");
  });

  it("drains a host: the next project goes to another host", async () => {
    otherHost = await stack.addHost({ runtime: "docker", image: dockerContext().droidImage });
    await admin.getByRole("link", { name: "Hosts" }).click();
    const table = admin.getByRole("table", { name: "Hosts" });
    await table.getByText(otherHost.hostId).waitFor({ timeout: 20_000 });
    await screenshot(admin, "hosts");
    await admin.getByRole("button", { name: `Drain ${dockerHost.hostId}` }).click();
    await expect
      .poll(
        async () => {
          const hosts = await caller.ok<{ hosts: { host_id: string; state?: string; draining?: boolean }[] }>(
            "host",
            {
              action: "list",
            },
          );
          const drained = hosts.hosts.find((h) => h.host_id === dockerHost.hostId);
          return drained?.draining === true || drained?.state === "draining";
        },
        { timeout: 10_000 },
      )
      .toBe(true);
    const next = await newProject();
    await caller.ok("container", { action: "start", project_id: next });
    const placed = await caller.ok<{ host_id: string | null }>("project", {
      action: "get",
      project_id: next,
    });
    expect(placed.host_id).toBe(otherHost.hostId);
  }, 180_000);

  it("cancels a running job from the page: its command is killed", async () => {
    const project = await newProject();
    await caller.ok("container", { action: "start", project_id: project });
    // A long exec becomes a job; its call answers later (with the job's id, or its outcome).
    const call = caller.call("container", { action: "exec", project_id: project, command: ["sleep", "300"] });
    let jobId = "";
    await expect
      .poll(
        async () => {
          const jobs = await caller.ok<{ jobs: { job_id: string; status: string }[] }>("job", {
            action: "list",
            project_id: project,
            status: "running",
          });
          jobId = jobs.jobs[0]?.job_id ?? "";
          return jobId;
        },
        { timeout: 30_000 },
      )
      .not.toBe("");
    await admin.getByRole("link", { name: "Jobs" }).click();
    await admin.getByRole("button", { name: `Cancel ${jobId}` }).click({ timeout: 15_000 });
    await expect
      .poll(
        async () => (await caller.ok<{ status: string }>("job", { action: "get", job_id: jobId })).status,
        {
          timeout: 20_000,
        },
      )
      .toBe("cancelled");
    await call;
  }, 120_000);

  it("revokes a host from the page: its token is refused and it is cut off", async () => {
    const hostId = `console-revoked-${crypto.randomUUID().slice(0, 6)}`;
    const { token } = await caller.ok<{ token: string }>("host", { action: "enrol", host_id: hostId });
    await stack.addHost({ runtime: "process", hostId, hostToken: token });
    await admin.getByRole("link", { name: "Hosts" }).click();
    await admin.getByRole("table", { name: "Hosts" }).getByText(hostId).waitFor({ timeout: 20_000 });
    await admin.getByRole("button", { name: `Revoke ${hostId}` }).click();
    await expect
      .poll(
        async () => {
          const hosts = await caller.ok<{ hosts: { host_id: string; connected: boolean }[] }>("host", {
            action: "list",
          });
          return hosts.hosts.find((h) => h.host_id === hostId)?.connected ?? false;
        },
        { timeout: 20_000 },
      )
      .toBe(false);
    // Its token no longer opens the tunnel.
    const url = new URL(`/v1/tunnel/host?host_id=${hostId}`, stack.url.replace("http", "ws"));
    const ws = new WebSocket(url, { headers: { authorization: `Bearer ${token}` } });
    const status = await new Promise<number>((resolve) => {
      ws.once("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
      ws.once("open", () => resolve(101));
      ws.once("error", () => resolve(0));
    });
    ws.terminate();
    expect(status).toBe(401);
  }, 90_000);
});

describe("a read-only person", () => {
  it("has no mutating control, and a forged mutation is refused", async () => {
    const projectId = await newProject();
    const sessionId = await droidIn(projectId);
    const { token } = await caller.ok<{ token: string }>("token", {
      action: "create",
      name: "console-reader",
      scope: `project:${projectId}:ro`,
    });
    const reader = await signIn(token);
    await reader.goto(`${stack.url}/#/sessions/${sessionId}`);
    await reader.getByRole("heading", { name: `Session ${sessionId}` }).waitFor();
    await events(reader).getByRole("listitem").first().waitFor({ timeout: 30_000 });
    for (const name of ["Send", "Interrupt", "End session"])
      expect(await reader.getByRole("button", { name, exact: true }).count()).toBe(0);
    expect(await reader.getByLabel("Message").count()).toBe(0);
    expect(await reader.getByRole("link", { name: "Tokens" }).count()).toBe(0);
    // Read-only, the workspace's files can still be browsed and read (as text: markup stays inert).
    const container = await projectContainer(docker, projectId);
    const wrote = await execAs(container, "0", [
      "sh",
      "-c",
      'mkdir -p /workspace/default/docs && printf "%s" "$1" > /workspace/default/docs/notes.html',
      "sh",
      '<script>window.__pwned=3</script><i id="italic">hi</i>',
    ]);
    expect(wrote.code).toBe(0);
    await reader.goto(`${stack.url}/#/projects/${projectId}`);
    await reader.getByRole("link", { name: "Files of default" }).click();
    await reader.getByRole("heading", { name: "Files of default", level: 1 }).waitFor();
    await reader.getByRole("list", { name: "Files" }).getByRole("link", { name: "docs/" }).click();
    await reader.getByRole("list", { name: "Files" }).getByRole("link", { name: "notes.html" }).click();
    const content = reader.getByLabel("File content");
    await expect
      .poll(async () => content.textContent(), { timeout: 30_000 })
      .toContain('<i id="italic">hi</i>');
    expect(await reader.locator("#italic").count()).toBe(0);
    expect(await reader.evaluate("window.__pwned")).toBeUndefined();
    await screenshot(reader, "files");
    // A forged call with the page's own CSRF token is refused by the same access check as MCP.
    const forged = (await reader.evaluate(`(async () => {
      const csrf = document.querySelector('meta[name="oubliette-csrf"]').getAttribute("content");
      const response = await fetch("/console/api/call", {
        method: "POST",
        headers: { "content-type": "application/json", "x-oubliette-csrf": csrf },
        body: JSON.stringify({ name: "session", arguments: { action: "end", session_id: ${JSON.stringify(sessionId)} } }),
      });
      return { status: response.status, body: await response.json() };
    })()`)) as { status: number; body: Record<string, unknown> };
    expect(forged.status).toBe(200);
    expect(forged.body.isError).toBe(true);
    expect(JSON.stringify(forged.body)).toContain("forbidden");
    // Without the CSRF token, refused before anything runs.
    const noCsrf = await reader.evaluate(async () => {
      const response = await fetch("/console/api/call", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ name: "project", arguments: { action: "list" } }),
      });
      return response.status;
    });
    expect(noCsrf).toBe(403);
    const still = await caller.ok<{ status: string }>("session", { action: "get", session_id: sessionId });
    expect(still.status).not.toBe("ended");
    await reader.context().close();
  });
});

describe("revoking the signed-in token", () => {
  it("the page loses access within about 2 s", async () => {
    const { token, token_id } = await caller.ok<{ token: string; token_id: string }>("token", {
      action: "create",
      name: "console-revoked",
      scope: "admin:ro",
    });
    const page = await signIn(token);
    // admin:ro may read the administration too: the audit log and the hosts.
    await page.getByRole("link", { name: "Audit" }).click();
    await page.getByRole("table", { name: "Audit log" }).waitFor();
    await screenshot(page, "audit");
    expect(await page.getByRole("button", { name: /^Drain / }).count()).toBe(0);
    await caller.ok("token", { action: "revoke", token_id });
    const revokedAt = Date.now();
    await page.getByRole("alert").filter({ hasText: "Your sign-in ended" }).waitFor({ timeout: 5_000 });
    expect(Date.now() - revokedAt).toBeLessThan(4_000);
    const after = await page.evaluate(async () => (await fetch("/console/api/me")).status);
    expect(after).toBe(401);
    await page.context().close();
  });
});

describe("the page itself", () => {
  it("is served with a strict CSP, no framing, an HttpOnly sign-in cookie and no token in the URL", async () => {
    const response = await admin.goto(stack.url);
    const headers = response?.headers() ?? {};
    expect(headers["content-security-policy"]).toContain("script-src 'self'");
    expect(headers["content-security-policy"]).toContain("frame-ancestors 'none'");
    expect(headers["content-security-policy"]).not.toContain("unsafe-inline");
    const cookies = await admin.context().cookies();
    const signin = cookies.find((c) => c.name.endsWith("signin"));
    expect(signin?.httpOnly).toBe(true);
    expect(admin.url()).not.toContain("oub_");
    expect(
      await admin.evaluate("Object.keys(localStorage).length + Object.keys(sessionStorage).length"),
    ).toBe(0);
  });
});
