/**
 * An agent adapter: everything the runner needs to know about one agent CLI, behind one small
 * interface. A driver is made per agent process (some protocols carry ids from the handshake,
 * such as a thread or session id, into every later message) and is pure: it turns intents into
 * the lines to write to the agent's stdin and the agent's stdout lines into common events. The
 * runner owns the process, the pipes, the files and the order of writes.
 */
import type { AgentEventBody } from "../../../protocol/agent-events.js";
import type { AgentRuntime } from "../../../protocol/agent-runtimes.js";
import type { ApprovalDecision, ApprovalRequest } from "../../../protocol/approvals.js";

/** The container-client as the agent's MCP server (stdio), named `oubliette` in the agent's config. */
export interface McpServerSpec {
  name: string;
  command: string;
  args: string[];
  env: Record<string, string>;
}

/**
 * How long an agent lets one call of the container-client's tools run before it gives up on its
 * own, where its config can say so. Oubliette's own deadlines end every call first (a caller's
 * answer may take up to its timeout, 15 minutes at most by default, a job-class call waits up to
 * its bound): an agent's shorter default (Codex 60 s, Gemini 10 minutes) would cut off a call
 * still under way, so it is set well past them.
 */
export const AGENT_TOOL_CALL_TIMEOUT_MS = 24 * 60 * 60_000;

/**
 * How long an agent gives the container-client's MCP server to start and list its tools before it
 * counts it failed, where its config can say so. The first listing waits up to 15 s for the
 * caller's and Oubliette's tools (first-listing.ts), past Codex's default of 10 s on a loaded host.
 */
export const AGENT_MCP_STARTUP_TIMEOUT_MS = 120_000;

/** What a driver may use to build its launch. */
export interface DriverContext {
  runtime: AgentRuntime;
  sessionId: string;
  /** The working directory (the session's workspace). */
  cwd: string;
  /** The agent's own home: a fresh directory per session, for the CLI's config and state. */
  home: string;
  /** The model to use (the spawn's, else the project's, else the runtime's default). */
  model: string;
  /** The model forwarder in the container: `http://127.0.0.1:<port>` (no path). */
  modelBaseUrl: string;
  /** The credential the agent presents to the model forwarder: a per-session placeholder, never a provider key. */
  modelToken: string;
  /** The CLI's argv prefix (from the runtime catalogue, or the image's command for the scripted agent). */
  command: readonly string[];
  mcpServer: McpServerSpec;
  /**
   * The CLI's own id of the conversation to continue (what `conversationId` said before the
   * process died): the new process resumes it with the CLI's own mechanism.
   */
  resume?: string | undefined;
  /**
   * `auto`: the agent acts unasked (its CLI's fully automatic mode). `ask`: it runs so that its
   * own permission system asks, and the driver returns each question as a `PermissionAsk`.
   */
  approvals?: "auto" | "ask" | undefined;
}

/** A file the runner writes (as the agent's user, mode 0600) before it starts the agent. */
export interface LaunchFile {
  /** Absolute path; its directory is created too. */
  path: string;
  content: string;
}

/**
 * Files to copy before the agent starts (as its user), because the CLI overwrites them as it
 * starts: in `dir` (a path segment that is just `*` matches any directory there), each file whose name matches
 * `pattern` (a regular expression) is copied to the name `rename` makes of it (a replacement
 * string for that expression), unless that copy exists.
 */
export interface LaunchKeep {
  dir: string;
  pattern: string;
  rename: string;
}

/**
 * Asking: a workspace file the CLI obeys although it stops the asking, which no flag or variable
 * turns off (docs/approval-hooks.md). The runner refuses to start the agent while one is there, in
 * the workspace or a directory above it up to its git root.
 */
export interface WorkspaceHazard {
  /** The directory, relative to each of those (`""`: the directory itself). */
  dir: string;
  /** A regular expression the file's name matches. */
  name: string;
  /** A regular expression its content must match to count (absent: any such file counts). */
  content?: string;
  /** What the CLI would do with it, said in the refusal. */
  why: string;
}

export interface AgentLaunch {
  argv: string[];
  /** Added to the agent's environment (over the runner's). */
  env: Record<string, string>;
  files: LaunchFile[];
  keep?: LaunchKeep[];
  /**
   * Paths in the agent's home removed before each start, before `files` are written: asking, the
   * CLI's user config that the agent itself could have written to stop the asking at its next start.
   */
  clear?: string[];
  /** Asking: workspace files that would stop the asking (see WorkspaceHazard). */
  hazards?: WorkspaceHazard[];
}

/**
 * One permission question of the agent's: the runner puts `request` to the session (it decides,
 * by its policy or a person's answer) and writes `answer(decision)` back to the same agent
 * process, which waits meanwhile.
 */
export interface PermissionAsk {
  /** The request, as the session's policy and its caller see it. */
  request: ApprovalRequest;
  /** Lines to write to the agent that answer it with `decision` (may be none). */
  answer(decision: ApprovalDecision): string[];
}

/**
 * What one stdout line means: events for the session, lines to write back to the agent, and
 * permission questions to put to the session (absent: none).
 */
export interface DriverOutput {
  events: AgentEventBody[];
  write: string[];
  asks?: PermissionAsk[];
  /**
   * Questions (asks returned earlier, the same objects) the agent took back, e.g. on an
   * interrupt: the runner ends them at the session, so nobody is left to answer what no longer
   * waits.
   */
  withdrawn?: PermissionAsk[];
}

export interface AgentDriver {
  launch(): AgentLaunch;
  /** Lines to write as soon as the process runs (the protocol's handshake, if any). */
  start(): string[];
  /**
   * Lines that send droid message `seq` as a new user turn. A driver whose handshake is still
   * going keeps the message and returns its lines from `read` once the agent is ready.
   */
  send(seq: number, text: string): string[];
  /** Lines that interrupt the turn in flight (none when no turn is in flight). */
  interrupt(): string[];
  /** One line the agent printed on stdout. */
  read(line: string): DriverOutput;
  /** The CLI's own id of this conversation, once it has said it (to resume after a crash). */
  conversationId?(): string | undefined;
  /**
   * Whether an exit nobody asked for is a crash to recover from (restart and resume); default:
   * always. The scripted droid ends its session on purpose by exiting with 0.
   */
  crashed?(exit: { exitCode: number | null; signal: string | null }): boolean;
}

export type DriverFactory = (context: DriverContext) => AgentDriver;

/** Nothing to do for a line. */
export const NOTHING: DriverOutput = Object.freeze({ events: [], write: [] }) as DriverOutput;

export function output(events: AgentEventBody[], write: string[] = []): DriverOutput {
  return { events, write };
}

/** A line that asks permission (and perhaps says something besides). */
export function asking(
  asks: PermissionAsk[],
  events: AgentEventBody[] = [],
  write: string[] = [],
): DriverOutput {
  return { events, write, asks };
}

/** A request of the agent's the driver answered on its own (an approval, a question), for a caller's eye. */
export function autoAnswered(message: string, data: { method: string; granted: boolean }): AgentEventBody {
  return { type: "system", subtype: "auto_answer", message, data };
}
