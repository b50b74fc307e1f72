/**
 * The assistant's text in an ACP turn: ACP streams only chunks (`agent_message_chunk`), so the
 * driver puts them together into a whole `message`, ended by a tool call, by the next message
 * (OpenCode names each chunk's message; Gemini does not) or by the end of the turn.
 */
import type { AgentEventBody } from "../../../protocol/agent-events.js";

export class MessageText {
  #chunks: string[] = [];
  #messageId: string | undefined;

  /** A chunk: its `delta`, after the whole message before it when it starts another one. */
  add(text: string, messageId: string | undefined): AgentEventBody[] {
    const events = messageId !== undefined && messageId !== this.#messageId ? this.flush() : [];
    if (messageId !== undefined) this.#messageId = messageId;
    this.#chunks.push(text);
    events.push({ type: "delta", text });
    return events;
  }

  /** The message put together so far, if any. */
  flush(): AgentEventBody[] {
    const text = this.#chunks.join("");
    this.#chunks = [];
    return text === "" ? [] : [{ type: "message", text }];
  }
}
