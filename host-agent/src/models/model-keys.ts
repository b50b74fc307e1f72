/**
 * The provider keys of this host and where each provider's requests go. Read from the host's
 * environment (`OUBLIETTE_ANTHROPIC_API_KEY`, `OUBLIETTE_OPENAI_API_KEY`, `OUBLIETTE_GEMINI_API_KEY`,
 * and `…_BASE_URL` for another upstream) and, when given, a JSON file (`--model-keys`):
 * `{"anthropic": {"api_key": "…", "base_url": "…"}, …}` (the file wins). Keys stay on the host:
 * they are never sent to the Worker, never put in a container, and never logged.
 */
import { readFileSync } from "node:fs";
import { z } from "zod";
import { type ModelProvider, ModelProviderSchema } from "../../../protocol/agent-runtimes.js";
import { PROVIDERS } from "./providers.js";

const ProviderKeySchema = z.object({
  api_key: z.string().min(1).max(4096).optional(),
  base_url: z.url({ protocol: /^https?$/ }).optional(),
});
const ModelKeysFileSchema = z.partialRecord(ModelProviderSchema, ProviderKeySchema);

export interface ProviderEndpoint {
  baseUrl: string;
  apiKey: string | null;
}

export type ModelKeys = Readonly<Record<ModelProvider, ProviderEndpoint>>;

/** The environment variable names of a provider. */
export const PROVIDER_ENV: Readonly<Record<ModelProvider, { key: string; baseUrl: string }>> = {
  anthropic: { key: "OUBLIETTE_ANTHROPIC_API_KEY", baseUrl: "OUBLIETTE_ANTHROPIC_BASE_URL" },
  openai: { key: "OUBLIETTE_OPENAI_API_KEY", baseUrl: "OUBLIETTE_OPENAI_BASE_URL" },
  google: { key: "OUBLIETTE_GEMINI_API_KEY", baseUrl: "OUBLIETTE_GEMINI_BASE_URL" },
};

export class ModelKeysError extends Error {
  readonly code = "invalid_model_keys";
}

export function loadModelKeys(env: NodeJS.ProcessEnv, file?: string): ModelKeys {
  let fromFile: z.infer<typeof ModelKeysFileSchema> = {};
  if (file !== undefined) {
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (err) {
      throw new ModelKeysError(`cannot read the model keys file: ${(err as Error).message}`);
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new ModelKeysError("the model keys file is not JSON");
    }
    const parsed = ModelKeysFileSchema.safeParse(json);
    // The message names fields, never values: a key must not reach a log.
    if (!parsed.success)
      throw new ModelKeysError(`the model keys file is invalid at ${parsed.error.issues[0]?.path.join(".")}`);
    fromFile = parsed.data;
  }
  const keys = {} as Record<ModelProvider, ProviderEndpoint>;
  for (const provider of ModelProviderSchema.options) {
    const names = PROVIDER_ENV[provider];
    const envBase = env[names.baseUrl];
    if (envBase !== undefined && !z.url({ protocol: /^https?$/ }).safeParse(envBase).success)
      throw new ModelKeysError(`${names.baseUrl} must be an http(s) URL`);
    keys[provider] = {
      baseUrl: (fromFile[provider]?.base_url ?? envBase ?? PROVIDERS[provider].defaultBaseUrl).replace(
        /\/+$/,
        "",
      ),
      apiKey: fromFile[provider]?.api_key ?? (env[names.key] || null),
    };
  }
  return keys;
}

/** The providers this host has a key for (what it may say about keys: their presence, never them). */
export function configuredProviders(keys: ModelKeys): ModelProvider[] {
  return ModelProviderSchema.options.filter((provider) => keys[provider].apiKey !== null);
}
