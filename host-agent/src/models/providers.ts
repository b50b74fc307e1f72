/**
 * The model providers the proxy forwards to, each with its upstream, the only API paths it
 * allows, and how a key is presented. A request's path decides its provider: the CLIs' endpoints
 * do not overlap (Anthropic Messages; OpenAI Chat Completions, Responses and model list; Gemini).
 */
import type { ModelProvider } from "../../../protocol/agent-runtimes.js";

export interface ProviderRules {
  /** Where requests go unless the host configures another base URL. */
  defaultBaseUrl: string;
  /** Allowed request paths (without the query string). */
  paths: readonly RegExp[];
  /** The header carrying the host's key. */
  keyHeaders(key: string): Record<string, string>;
  /** The protocol the responses speak (how usage is read from them). */
  usageFormat(path: string): UsageFormat;
}

export type UsageFormat = "anthropic" | "openai_chat" | "openai_responses" | "gemini" | "none";

export const PROVIDERS: Readonly<Record<ModelProvider, ProviderRules>> = {
  anthropic: {
    defaultBaseUrl: "https://api.anthropic.com",
    paths: [/^\/v1\/messages$/, /^\/v1\/messages\/count_tokens$/],
    keyHeaders: (key) => ({ "x-api-key": key }),
    usageFormat: (path) => (path === "/v1/messages" ? "anthropic" : "none"),
  },
  openai: {
    defaultBaseUrl: "https://api.openai.com",
    paths: [/^\/v1\/chat\/completions$/, /^\/v1\/responses$/, /^\/v1\/models$/],
    keyHeaders: (key) => ({ authorization: `Bearer ${key}` }),
    usageFormat: (path) =>
      path === "/v1/chat/completions"
        ? "openai_chat"
        : path === "/v1/responses"
          ? "openai_responses"
          : "none",
  },
  google: {
    defaultBaseUrl: "https://generativelanguage.googleapis.com",
    paths: [/^\/v1beta\/models\/[A-Za-z0-9._-]+:(generateContent|streamGenerateContent|countTokens)$/],
    keyHeaders: (key) => ({ "x-goog-api-key": key }),
    usageFormat: (path) => (/:(generateContent|streamGenerateContent)$/.test(path) ? "gemini" : "none"),
  },
};

/** The provider whose allowlist holds `path`, or null (the proxy refuses the request). */
export function providerFor(path: string): ModelProvider | null {
  for (const [name, rules] of Object.entries(PROVIDERS) as [ModelProvider, ProviderRules][]) {
    if (rules.paths.some((pattern) => pattern.test(path))) return name;
  }
  return null;
}

/** Request headers that carry a credential: the agent's placeholder is read from them and never forwarded. */
export const CREDENTIAL_HEADERS = ["x-api-key", "authorization", "x-goog-api-key"] as const;
