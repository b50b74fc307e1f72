import { z } from "zod";
import { config } from "../env.js";
import { AppError, unwrap } from "../errors.js";
import { hostSetup } from "../hosts/host-setup.js";
import { objects } from "../objects/keys.js";
import { mintToken } from "../tokens/mint.js";
import { action, defineActionTool } from "./define.js";

const HostIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9_.-]{1,128}$/, "host_id is 1-128 letters, digits, '_', '.' or '-'")
  .describe("The host's id (its host-agent's --host-id).");

export const hostTool = defineActionTool({
  name: "host",
  title: "Container hosts",
  description:
    "The machines that run project containers (admin only; admin:ro may list): enrol one with its own token, list them, drain one, revoke one.",
  actions: {
    enrol: action({
      description:
        "Create the host token a new host-agent presents (bound to host_id; one per host). Returns the token once.",
      access: "admin",
      target: "global",
      timing: "sync",
      example: { host_id: "builder-1" },
      input: z.strictObject({
        host_id: HostIdSchema,
        worker_url: z
          .url({ protocol: /^https?$/ })
          .max(2048)
          .optional()
          .describe(
            "This Worker's URL as the host reaches it (default: the first OUBLIETTE_PUBLIC_ORIGINS).",
          ),
      }),
      async handler(args, ctx) {
        ctx.auditTarget(args.host_id);
        const minted = await mintToken();
        const info = unwrap(
          await objects.tokens(ctx.env).create({
            kind: "host",
            name: `host ${args.host_id}`,
            scopes: [],
            hostId: args.host_id,
            expiresAt: null,
            createdBy: ctx.principal.tokenId,
            sha256: minted.sha256,
            prefix: minted.prefix,
          }),
        );
        const workerUrl =
          args.worker_url ?? config(ctx.env).publicOrigins[0] ?? "https://<this Worker's URL>";
        return {
          ...info,
          token: minted.token,
          ...hostSetup({ workerUrl, hostId: args.host_id, token: minted.token }),
          note: `The token is shown once: save the environment file now. The host-agent starts with --host-id ${args.host_id} and this token.`,
        };
      },
    }),
    list: action({
      description: "List hosts: connected or missing, runtime, sessions and capacity, draining.",
      access: "admin_read",
      target: "global",
      timing: "sync",
      example: {},
      input: z.object({}),
      async handler(_args, ctx) {
        const [hosts, tokens] = await Promise.all([
          objects.hostRegistry(ctx.env).list(),
          objects.tokens(ctx.env).list("host"),
        ]);
        const tokenOf = new Map(
          tokens.filter((t) => t.status === "active").map((t) => [t.host_id, t.token_id]),
        );
        return { hosts: hosts.map((h) => ({ ...h, token_id: tokenOf.get(h.host_id) ?? null })) };
      },
    }),
    drain: action({
      description:
        "Drain a host (no new placements; running sessions finish), or undrain it with drain: false.",
      access: "admin",
      target: "global",
      timing: "sync",
      example: { host_id: "builder-1", drain: true },
      input: z.object({ host_id: HostIdSchema, drain: z.boolean().default(true) }),
      async handler(args, ctx) {
        ctx.auditTarget(args.host_id);
        const host = await objects.hostRegistry(ctx.env).drain({ hostId: args.host_id, drained: args.drain });
        return host ?? { host_id: args.host_id, draining: args.drain, connected: false };
      },
    }),
    revoke: action({
      description:
        "Revoke a host's token and cut it off now; its sessions end after the host grace period, and it is no longer listed (a lost host too). Its projects stay placed on it: their next spawn needs relocate.",
      access: "admin",
      target: "global",
      timing: "sync",
      example: { host_id: "builder-1" },
      input: z.strictObject({
        host_id: HostIdSchema,
        worker_url: z
          .url({ protocol: /^https?$/ })
          .max(2048)
          .optional()
          .describe(
            "This Worker's URL as the host reaches it (default: the first OUBLIETTE_PUBLIC_ORIGINS).",
          ),
      }),
      async handler(args, ctx) {
        ctx.auditTarget(args.host_id);
        const revoked = await objects.tokens(ctx.env).revokeHost(args.host_id);
        const { known } = await objects
          .hostRegistry(ctx.env)
          .disconnectHost({ hostId: args.host_id, reason: "its token was revoked", tokenIds: revoked });
        if (revoked.length === 0 && !known)
          throw new AppError("not_found", `host ${args.host_id} has no active token and is not known here`);
        return {
          host_id: args.host_id,
          revoked_tokens: revoked,
          ...(revoked.length === 0
            ? {
                note: `host ${args.host_id} had no token of its own (it used the shared host token): it is no longer listed, but the shared token still lets it connect`,
              }
            : {}),
        };
      },
    }),
  },
});
