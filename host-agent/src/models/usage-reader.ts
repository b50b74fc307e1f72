/**
 * Reads a model response's usage as its bytes stream past: the proxy never holds a response
 * back to meter it. Server-sent events are read line by line (`data:` payloads); a plain JSON body
 * is read whole, up to a bound. Each protocol names its counts differently; for every count the
 * last value seen wins (Anthropic sends input in `message_start` and the running output in
 * `message_delta`; OpenAI and Gemini repeat totals in their last chunk).
 */
import type { UsageFormat } from "./providers.js";

export interface ResponseUsage {
  inputTokens: number;
  outputTokens: number;
  model: string | null;
}

/** Longest SSE line or JSON body looked at; beyond it the response is passed on but not read. */
const MAX_READ_BYTES = 8 * 1024 * 1024;

type Json = Record<string, unknown>;

export class UsageReader {
  readonly #format: UsageFormat;
  readonly #sse: boolean;
  #pending = "";
  #skipping = false;
  #input: number | null = null;
  #output: number | null = null;
  #model: string | null = null;

  constructor(format: UsageFormat, contentType: string | undefined) {
    this.#format = format;
    this.#sse = (contentType ?? "").includes("text/event-stream");
  }

  push(chunk: Buffer): void {
    if (this.#format === "none") return;
    const text = chunk.toString("utf8");
    if (!this.#sse) {
      if (this.#pending.length + text.length > MAX_READ_BYTES) this.#skipping = true;
      else this.#pending += text;
      return;
    }
    this.#pending += text;
    let newline = this.#pending.indexOf("\n");
    while (newline !== -1) {
      const line = this.#pending.slice(0, newline).replace(/\r$/, "");
      this.#pending = this.#pending.slice(newline + 1);
      if (!this.#skipping && line.startsWith("data:")) this.#read(line.slice(5).trim());
      this.#skipping = false;
      newline = this.#pending.indexOf("\n");
    }
    if (this.#pending.length > MAX_READ_BYTES) {
      this.#pending = "";
      this.#skipping = true;
    }
  }

  /** The usage read, or null when the response said nothing about it. */
  finish(): ResponseUsage | null {
    if (this.#format === "none") return null;
    if (!this.#sse && !this.#skipping) this.#read(this.#pending);
    else if (this.#sse && this.#pending.startsWith("data:")) this.#read(this.#pending.slice(5).trim());
    this.#pending = "";
    if (this.#input === null && this.#output === null) return null;
    return { inputTokens: this.#input ?? 0, outputTokens: this.#output ?? 0, model: this.#model };
  }

  #read(payload: string): void {
    if (payload === "" || payload === "[DONE]") return;
    let value: unknown;
    try {
      value = JSON.parse(payload);
    } catch {
      return;
    }
    if (typeof value === "object" && value !== null) this.#take(value as Json);
  }

  #take(event: Json): void {
    switch (this.#format) {
      case "anthropic": {
        const message = asObject(event.message);
        this.#setModel(message?.model ?? event.model);
        const usage = asObject(message?.usage) ?? asObject(event.usage);
        if (!usage) return;
        const input =
          sum(usage.input_tokens, usage.cache_creation_input_tokens, usage.cache_read_input_tokens) ?? null;
        if (input !== null && event.type !== "message_delta") this.#input = input;
        if (typeof usage.output_tokens === "number") this.#output = usage.output_tokens;
        return;
      }
      case "openai_chat": {
        this.#setModel(event.model);
        const usage = asObject(event.usage);
        if (!usage) return;
        if (typeof usage.prompt_tokens === "number") this.#input = usage.prompt_tokens;
        if (typeof usage.completion_tokens === "number") this.#output = usage.completion_tokens;
        return;
      }
      case "openai_responses": {
        const response = asObject(event.response) ?? event;
        this.#setModel(response.model);
        const usage = asObject(response.usage);
        if (!usage) return;
        if (typeof usage.input_tokens === "number") this.#input = usage.input_tokens;
        if (typeof usage.output_tokens === "number") this.#output = usage.output_tokens;
        return;
      }
      case "gemini": {
        this.#setModel(event.modelVersion);
        const usage = asObject(event.usageMetadata);
        if (!usage) return;
        if (typeof usage.promptTokenCount === "number") this.#input = usage.promptTokenCount;
        const output = sum(usage.candidatesTokenCount, usage.thoughtsTokenCount);
        if (output !== undefined) this.#output = output;
        return;
      }
      case "none":
        return;
    }
  }

  #setModel(model: unknown): void {
    if (typeof model === "string" && model !== "") this.#model = model.slice(0, 256);
  }
}

function asObject(value: unknown): Json | null {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Json) : null;
}

/** The sum of the numbers among `values`, or undefined when there is none. */
function sum(...values: unknown[]): number | undefined {
  const numbers = values.filter((v): v is number => typeof v === "number" && Number.isFinite(v) && v >= 0);
  return numbers.length === 0 ? undefined : numbers.reduce((a, b) => a + b, 0);
}
