/**
 * Factory Droid (`droid exec` speaking stream-jsonrpc), as verified in AGENT-RUNTIMES.md: JSON-RPC
 * lines tagged `"factoryApiVersion":"1.0.0"`. The handshake is `droid.initialize_session` (cwd,
 * the custom model, autonomy high, the container-client as MCP server `oubliette`, whose tools the
 * model sees as `oubliette___<tool>`); a user turn is `droid.add_user_message`; an interrupt is
 * `droid.interrupt_session`; a turn ends with the `agent_turn_completed` notification. The model is
 * a custom model in `~/.factory/settings.json` pointing at the forwarder, its key read from an
 * environment variable holding the session's placeholder. Air-gapped mode stops all other traffic.
 * After a crash the new process continues the conversation with `droid.load_session` (droid keeps
 * its sessions in the agent's home); a session it cannot load gives way to a new one, with a warning.
 * Approvals `auto`: autonomy high, and a request of droid's (none is expected) is refused. `ask`:
 * autonomy off, so droid asks before edits, commands and MCP calls (`droid.request_permission`),
 * each question a PermissionAsk (droid-permission.ts); a loaded session is set to autonomy off
 * again (`droid.update_session_settings`), in case it was saved otherwise.
 */
import type { AgentEventBody } from "../../../protocol/agent-events.js";
import {
  type AgentDriver,
  type DriverContext,
  type DriverOutput,
  NOTHING,
  output,
  type WorkspaceHazard,
} from "./driver.js";
import { droidPermissions, PERMISSION_METHOD } from "./droid-permission.js";
import { assistantBlocks, contentText, json, jsonObject, record, text } from "./json-line.js";
import { Turns } from "./turns.js";

const API_VERSION = "1.0.0";
/** The environment variable the custom model's key is read from. */
const KEY_ENV = "OUBLIETTE_MODEL_KEY";
const INIT_ID = "oub-init";
const LOAD_ID = "oub-load";

/**
 * Asking: a project `commandAllowlist` (in `.factory/settings.json` or `settings.local.json` of the
 * workspace or its git root) lets its commands run unasked at autonomy off; allowlists of every
 * level add up, and nothing skips project settings (docs/approval-hooks.md), so the agent does not
 * start while one names a command.
 */
const DROID_HAZARDS: WorkspaceHazard[] = [
  {
    dir: ".factory",
    name: "^settings(\\.local)?\\.json$",
    content: '"commandAllowlist"\\s*:\\s*\\[\\s*[^\\]\\s]',
    why: "its commandAllowlist would run the commands it names without asking",
  },
];

export function droidDriver(context: DriverContext): AgentDriver {
  const turns = new Turns();
  const permissions =
    context.approvals === "ask" ? droidPermissions(context.mcpServer.name, context.cwd) : undefined;
  const autonomyLevel = permissions !== undefined ? "off" : "high";
  let ready = false;
  /** Droid's own id of the session, once its handshake answered. */
  let droidSessionId: string | undefined;
  /** A `droid.load_session` is under way: what droid re-sends of the old session is not news. */
  let loading = false;
  let nextId = 0;
  /** Messages sent before the session was initialised. */
  const early: { seq: number; text: string }[] = [];
  const request = (method: string, params: unknown, id = `oub-${++nextId}`) =>
    JSON.stringify({ jsonrpc: "2.0", factoryApiVersion: API_VERSION, type: "request", id, method, params });
  const mcpServers = () => [
    {
      name: context.mcpServer.name,
      command: context.mcpServer.command,
      args: context.mcpServer.args,
      env: context.mcpServer.env,
    },
  ];
  const initialize = () =>
    request(
      "droid.initialize_session",
      {
        machineId: context.sessionId,
        cwd: context.cwd,
        modelId: `custom:${context.model}`,
        autonomyLevel,
        mcpServers: mcpServers(),
      },
      INIT_ID,
    );
  /** The session is there: it takes the messages sent meanwhile. */
  const started = (sessionId: unknown, resumed: boolean): DriverOutput => {
    ready = true;
    loading = false;
    if (typeof sessionId === "string" && sessionId !== "") droidSessionId = sessionId;
    // A loaded session keeps the settings it was saved with: one that asks is made sure to.
    const settings =
      resumed && permissions !== undefined
        ? [request("droid.update_session_settings", { autonomyLevel })]
        : [];
    return output(
      [
        {
          type: "system",
          subtype: "init",
          message: `Factory Droid session ${resumed ? "resumed" : "started"} with model ${context.model}`,
          data: { droid_session_id: json(droidSessionId), ...(resumed ? { resumed: true } : {}) },
        },
      ],
      [...settings, ...early.splice(0).map((m) => userMessage(m.seq, m.text))],
    );
  };
  const userMessage = (seq: number, message: string) => {
    turns.begin(seq);
    return request("droid.add_user_message", { text: message });
  };

  return {
    launch: () => ({
      argv: [
        ...context.command,
        "exec",
        "--input-format",
        "stream-jsonrpc",
        "--output-format",
        "stream-jsonrpc",
      ],
      env: { [KEY_ENV]: context.modelToken, FACTORY_AIRGAP_ENABLED: "1" },
      files: [
        {
          path: `${context.home}/.factory/settings.json`,
          content: JSON.stringify({
            customModels: [
              {
                model: context.model,
                displayName: context.model,
                baseUrl: context.modelBaseUrl,
                apiKey: `\${${KEY_ENV}}`,
                provider: "anthropic",
                maxOutputTokens: 8192,
              },
            ],
            // Asking: no command runs unasked (Droid's default allowlist lets ls, git status… by),
            // so the session's shell rules see every command.
            ...(context.approvals === "ask" ? { commandAllowlist: [] } : {}),
          }),
        },
      ],
      ...(context.approvals === "ask" ? { hazards: DROID_HAZARDS } : {}),
    }),
    start: () => {
      if (context.resume === undefined) return [initialize()];
      loading = true;
      return [
        request("droid.load_session", { sessionId: context.resume, mcpServers: mcpServers() }, LOAD_ID),
      ];
    },
    conversationId: () => droidSessionId,
    send(seq, message) {
      if (!ready) {
        early.push({ seq, text: message });
        return [];
      }
      return [userMessage(seq, message)];
    },
    interrupt: () => (turns.inFlight ? [request("droid.interrupt_session", {})] : []),
    read(line) {
      const o = jsonObject(line);
      if (!o) return { events: [{ type: "droid_output", text: line }], write: [] };
      if (o.type === "response" && o.id === INIT_ID) {
        if (o.error !== undefined) {
          return {
            events: [
              {
                type: "error",
                message: `droid could not start its session: ${contentText(record(o.error)?.message ?? o.error)}`,
              },
            ],
            write: [],
          };
        }
        return started(record(o.result)?.sessionId, false);
      }
      if (o.type === "response" && o.id === LOAD_ID) {
        if (o.error === undefined) return started(context.resume, true);
        loading = false;
        const why = contentText(record(o.error)?.message ?? o.error);
        return output(
          [
            {
              type: "system",
              subtype: "warning",
              message: `the earlier session could not be loaded (${why}): a new conversation starts`,
            },
          ],
          [initialize()],
        );
      }
      if (o.type === "response" && o.error !== undefined) {
        return {
          events: [{ type: "error", message: contentText(record(o.error)?.message ?? o.error) }],
          write: [],
        };
      }
      if (o.type === "request" && o.method === PERMISSION_METHOD && permissions !== undefined)
        return permissions.ask(o);
      if (o.type === "request") {
        // Nothing should ask at autonomy high (nor else at off); refuse plainly rather than hang it.
        return {
          events: [
            {
              type: "system",
              subtype: "unanswered_request",
              message: `droid asked ${text(o.method) ?? "?"}`,
            },
          ],
          write: [
            JSON.stringify({
              jsonrpc: "2.0",
              factoryApiVersion: API_VERSION,
              type: "response",
              id: o.id,
              error: { code: -32601, message: "not supported by this client" },
            }),
          ],
        };
      }
      if (o.method !== "droid.session_notification" || loading) return NOTHING;
      const notification = record(record(o.params)?.notification);
      if (notification?.type === "permission_resolved" && permissions !== undefined)
        return permissions.resolved(notification);
      return { events: readNotification(notification, turns), write: [] };
    },
  };
}

function readNotification(n: Record<string, unknown> | null, turns: Turns): AgentEventBody[] {
  switch (n?.type) {
    case "assistant_text_delta":
      return typeof n.textDelta === "string" ? [{ type: "delta", text: n.textDelta }] : [];
    case "create_message": {
      const message = record(n.message);
      if (message?.role !== "assistant") return [];
      return assistantBlocks(message.content);
    }
    case "tool_result":
      return [
        {
          type: "tool_result",
          call_id: text(n.toolUseId) ?? "",
          output: contentText(n.content),
          ...(n.isError === true ? { is_error: true } : {}),
        },
      ];
    case "agent_turn_completed": {
      const reason = text(n.reason) ?? "";
      const stop = reason === "completed" ? "end_turn" : reason === "cancelled" ? "interrupted" : "error";
      const events: AgentEventBody[] = [turns.end(stop)];
      if (stop === "error")
        events.unshift({ type: "error", message: `the turn ended: ${reason || "unknown"}` });
      return events;
    }
    case "error":
      return [{ type: "error", message: text(n.message) ?? JSON.stringify(n) }];
    default:
      return [];
  }
}
