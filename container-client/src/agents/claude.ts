/**
 * Claude Code (`claude -p` with stream-json in and out), as verified in AGENT-RUNTIMES.md:
 * a user turn is `{"type":"user","message":{…}}` on stdin, the turn ends with a `result` line,
 * an interrupt is a `control_request` of subtype `interrupt`. Its MCP servers come from a config
 * file (the container-client as `oubliette`, tools named `mcp__oubliette__<tool>`); tool search is
 * off so MCP tools are offered directly; the only traffic is the model's (through the forwarder,
 * with the session's placeholder as the key). Approvals `auto`: permission prompts are skipped by
 * the flag, and a `can_use_tool` request that still comes is allowed (the session is unattended).
 * Approvals `ask`: the CLI runs in its `default` permission mode and puts each question to us on
 * stdout (`--permission-prompt-tool stdio`), our own MCP server's tools allowed up front, and no
 * settings of the workspace's or the agent's own can allow a tool unasked (`ownSettingsOnly`); the
 * questions become PermissionAsks (claude-permission.ts).
 */
import type { AgentEventBody } from "../../../protocol/agent-events.js";
import { claudePermissions } from "./claude-permission.js";
import type { AgentDriver, DriverContext, DriverOutput } from "./driver.js";
import { assistantBlocks, contentText, json, jsonObject, list, record, text } from "./json-line.js";
import { Turns } from "./turns.js";

export function claudeDriver(context: DriverContext): AgentDriver {
  const turns = new Turns();
  let sessionId: string | undefined;
  let interrupts = 0;
  let interrupting = false;
  const mcpConfig = `${context.home}/.oubliette/mcp.json`;
  const permissions =
    context.approvals === "ask" ? claudePermissions(context.mcpServer.name, context.cwd) : undefined;
  return {
    launch: () => ({
      argv: [
        ...context.command,
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
        "--include-partial-messages",
        "--mcp-config",
        mcpConfig,
        "--strict-mcp-config",
        ...(permissions !== undefined
          ? [
              ...ownSettingsOnly(context),
              "--permission-mode",
              "default",
              "--permission-prompt-tool",
              "stdio",
              // Variadic: the next argument must be an option (`--model`). Ignored under the
              // managed settings above (which allow the same tools); kept should those go.
              "--allowedTools",
              `mcp__${context.mcpServer.name}`,
            ]
          : ["--dangerously-skip-permissions"]),
        "--model",
        context.model,
        // After a crash, the same conversation (Claude Code keeps it in its home).
        ...(context.resume !== undefined ? ["--resume", context.resume] : []),
      ],
      env: {
        ANTHROPIC_BASE_URL: context.modelBaseUrl,
        ANTHROPIC_API_KEY: context.modelToken,
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
        DISABLE_AUTOUPDATER: "1",
        ENABLE_TOOL_SEARCH: "false",
        // Asking: the workspace's CLAUDE.md, read as an added directory's (see ownSettingsOnly).
        ...(permissions !== undefined ? { CLAUDE_CODE_ADDITIONAL_DIRECTORIES_CLAUDE_MD: "1" } : {}),
      },
      files: [
        {
          path: mcpConfig,
          content: JSON.stringify({
            mcpServers: {
              [context.mcpServer.name]: {
                command: context.mcpServer.command,
                args: context.mcpServer.args,
                env: context.mcpServer.env,
              },
            },
          }),
        },
      ],
      // Asking: the agent's own user settings start empty too, should a later Claude Code read them
      // although `--setting-sources=` leaves them out (an `apiKeyHelper`, `env`… there count).
      ...(permissions !== undefined ? { clear: [`${context.home}/.claude/settings.json`] } : {}),
    }),
    start: () => [],
    send(seq, message) {
      turns.begin(seq);
      return [JSON.stringify({ type: "user", message: { role: "user", content: message } })];
    },
    interrupt() {
      if (!turns.inFlight) return [];
      interrupting = true;
      interrupts += 1;
      return [
        JSON.stringify({
          type: "control_request",
          request_id: `oub-interrupt-${interrupts}`,
          request: { subtype: "interrupt" },
        }),
      ];
    },
    conversationId: () => sessionId,
    read(line) {
      const o = jsonObject(line);
      if (!o) return { events: [{ type: "droid_output", text: line }], write: [] };
      if ((o.type === "system" || o.type === "result") && typeof o.session_id === "string")
        sessionId = o.session_id;
      if (permissions !== undefined && (o.type === "control_request" || o.type === "control_cancel_request"))
        return permissions.read(o);
      const out = readClaudeLine(o, turns, interrupting);
      if (o.type === "result") interrupting = false;
      return out;
    },
  };
}

/**
 * Asking: settings that could stop Claude Code from asking come only from us (docs/approval-hooks.md,
 * "Settings an agent or repository could use to stop asking"). `--setting-sources=` (none) drops
 * the workspace's `.claude/settings.json` and `.claude/settings.local.json` (their allow rules and
 * hooks would otherwise run tools unasked; 2.1.330 honours the local file's rules and both files'
 * hooks in a workspace it does not trust), and with them its CLAUDE.md, rules, skills, agents and
 * commands; and the agent's own `~/.claude/settings.json`, which Claude Code re-reads while it
 * runs (an `apiKeyHelper` a command wrote there ran unasked in the same process), and its
 * `~/.claude/agents` and skills (read at the next start). The workspace given again as an added
 * directory, with CLAUDE_CODE_ADDITIONAL_DIRECTORIES_CLAUDE_MD, brings its CLAUDE.md and
 * `.claude/rules` back. The managed (policy) settings make permission rules and hooks from every
 * other source void, allow our own server's tools (the session gates those itself) and rule out the
 * bypass mode (a sub-agent's `permissionMode` included).
 */
function ownSettingsOnly(context: DriverContext): string[] {
  const managed = {
    allowManagedPermissionRulesOnly: true,
    allowManagedHooksOnly: true,
    permissions: { allow: [`mcp__${context.mcpServer.name}`], disableBypassPermissionsMode: "disable" },
  };
  return [
    "--setting-sources=",
    "--managed-settings",
    JSON.stringify(managed),
    // Variadic: the next argument must be an option (`--permission-mode`).
    "--add-dir",
    context.cwd,
  ];
}

function readClaudeLine(o: Record<string, unknown>, turns: Turns, interrupting: boolean): DriverOutput {
  switch (o.type) {
    case "stream_event": {
      const event = record(o.event);
      const delta = record(event?.delta);
      if (
        event?.type === "content_block_delta" &&
        delta?.type === "text_delta" &&
        typeof delta.text === "string"
      )
        return { events: [{ type: "delta", text: delta.text }], write: [] };
      return { events: [], write: [] };
    }
    case "assistant": {
      return { events: assistantBlocks(record(o.message)?.content), write: [] };
    }
    case "user": {
      const events: AgentEventBody[] = [];
      for (const block of list(record(o.message)?.content)) {
        const b = record(block);
        if (b?.type === "tool_result")
          events.push({
            type: "tool_result",
            call_id: text(b.tool_use_id) ?? "",
            output: contentText(b.content),
            ...(b.is_error === true ? { is_error: true } : {}),
          });
      }
      return { events, write: [] };
    }
    case "result": {
      const subtype = text(o.subtype) ?? "";
      const stop =
        subtype === "success"
          ? "end_turn"
          : interrupting
            ? "interrupted"
            : subtype === "error_max_turns"
              ? "max_turns"
              : "error";
      const events: AgentEventBody[] = [turns.end(stop, text(o.result))];
      if (stop === "error")
        events.unshift({ type: "error", message: `the turn failed (${subtype || "unknown"})` });
      return { events, write: [] };
    }
    case "system": {
      if (o.subtype !== "init") return { events: [], write: [] };
      return {
        events: [
          {
            type: "system",
            subtype: "init",
            message: `Claude Code ${text(o.claude_code_version) ?? ""} started with model ${text(o.model) ?? "?"}`,
            data: { model: json(o.model), mcp_servers: json(o.mcp_servers) },
          },
        ],
        write: [],
      };
    }
    case "control_request": {
      // An unattended session allows what the agent asks to do (its container is its boundary).
      const request = record(o.request);
      if (request?.subtype !== "can_use_tool") return { events: [], write: [] };
      return {
        events: [
          {
            type: "system",
            subtype: "permission_granted",
            message: `allowed ${text(request.tool_name) ?? "a tool"}`,
          },
        ],
        write: [
          JSON.stringify({
            type: "control_response",
            response: {
              subtype: "success",
              request_id: o.request_id,
              response: { behavior: "allow", updatedInput: request.input ?? {} },
            },
          }),
        ],
      };
    }
    default:
      return { events: [], write: [] };
  }
}
