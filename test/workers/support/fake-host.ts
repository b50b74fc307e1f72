import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import {
  type HostToSession,
  type RegistryToHost,
  RegistryToHostSchema,
  type SessionToHost,
  SessionToHostSchema,
  TUNNEL_PROTOCOL_VERSION,
} from "../../../protocol/tunnel.js";
import { closeAllSockets, FrameSocket } from "./frame-socket.js";
import { until } from "./poll.js";
import { HOST_TOKEN } from "./tokens.js";

/** How a fake host answers session_start / session_stop. */
export type HostAnswer = { ok: true } | { ok: false; message: string };

export interface FakeHostOptions {
  maxSessions?: number;
  /** Default: every request succeeds. null: the host never answers. */
  answer?: (frame: Extract<RegistryToHost, { type: "session_start" | "session_stop" }>) => HostAnswer | null;
}

/**
 * A host-agent's host channel (`/v1/tunnel/host`) speaking the real tunnel protocol: hello,
 * then an `ack` for every session_start / session_stop. Frames stay readable with `next`.
 */
export class FakeHost {
  private constructor(
    readonly hostId: string,
    readonly socket: FrameSocket<RegistryToHost>,
  ) {}

  static async connect(hostId: string, options: FakeHostOptions = {}): Promise<FakeHost> {
    const socket = await FrameSocket.connect(
      `/v1/tunnel/host?host_id=${encodeURIComponent(hostId)}`,
      HOST_TOKEN,
      (raw) => RegistryToHostSchema.parse(raw),
    );
    const answer = options.answer ?? (() => ({ ok: true }));
    socket.onFrame((frame) => {
      if (frame.type !== "session_start" && frame.type !== "session_stop") return;
      const a = answer(frame);
      if (a === null) return;
      socket.send(
        a.ok
          ? { type: "ack", req_id: frame.req_id, ok: true }
          : {
              type: "ack",
              req_id: frame.req_id,
              ok: false,
              error: { code: "runtime_error", message: a.message },
            },
      );
    });
    socket.send({
      type: "host_hello",
      v: TUNNEL_PROTOCOL_VERSION,
      host_id: hostId,
      runtime: "process",
      agent_version: "test",
      sessions: [],
      max_sessions: options.maxSessions ?? 10,
    });
    await socket.next("host_welcome");
    return new FakeHost(hostId, socket);
  }

  close(): void {
    this.socket.close();
  }
}

/** A frame a host may send on a session tunnel (typed by the shared schema). */
export type HostFrame = HostToSession;

/**
 * The host-agent's session tunnel (`/v1/tunnel/sessions/:id`). `hello()` performs the real
 * handshake and returns the welcome and the caller tools config the session sends first.
 */
export class SessionTunnel {
  private constructor(readonly socket: FrameSocket<SessionToHost>) {}

  static async open(sessionId: string, token = HOST_TOKEN): Promise<SessionTunnel> {
    return new SessionTunnel(
      await FrameSocket.connect(`/v1/tunnel/sessions/${sessionId}`, token, (raw) =>
        SessionToHostSchema.parse(raw),
      ),
    );
  }

  send(frame: HostFrame | string | Uint8Array): void {
    this.socket.send(frame);
  }

  async hello(hostId = "h1", deliveredMessageSeq = 0) {
    this.send({
      type: "session_hello",
      v: TUNNEL_PROTOCOL_VERSION,
      host_id: hostId,
      delivered_message_seq: deliveredMessageSeq,
    });
    const welcome = await this.socket.next("session_welcome");
    const config = await this.socket.next("caller_tools_config");
    return { welcome, config: config.config };
  }

  /** A droid's call of a caller tool, as the host relays it. */
  call(callId: string, tool = "send_response", args: Record<string, string | number> = {}): void {
    this.send({ type: "caller_tool_call", call_id: callId, tool, arguments: args });
  }

  /** The outcome the session relays back for `callId`. */
  async result(callId: string) {
    return (await this.socket.next("caller_tool_result", (f) => f.call_id === callId)).outcome;
  }

  /**
   * Waits until every frame sent before has been handled: the session answers frames in order,
   * and a frame that is not JSON always gets an `error` back.
   */
  async barrier(): Promise<void> {
    this.send("barrier");
    await this.socket.next("error", (f) => f.error.message.startsWith("invalid JSON"));
  }

  close(): void {
    this.socket.close();
  }
}

/** The one HostRegistryDurableObject. */
export function registryStub() {
  return env.HOSTS.get(env.HOSTS.idFromName("global"));
}

/**
 * Closes every socket the test opened and waits until the registry has dropped every host
 * connection (use in afterEach), so no test places a session on an earlier test's host.
 */
export async function disconnectAll(): Promise<void> {
  closeAllSockets();
  await until(
    async () => (await runInDurableObject(registryStub(), (_, state) => state.getWebSockets().length)) === 0,
    "the host registry has dropped every host connection",
  );
}
