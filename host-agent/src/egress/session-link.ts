/**
 * A session's side of the gate: its network approvals go to its object as `approval` requests of
 * kind `network` (the one durable mechanism the agents' own questions use, re-sent after every
 * reconnect under their id), its refusals as `network_blocked`, its totals as `network_usage`.
 * A question nobody waits for any more (the client gave up) is cancelled at the object.
 */
import { randomUUID } from "node:crypto";
import type { AgentRuntime } from "../../../protocol/agent-runtimes.js";
import type { ApprovalDecision, ApprovalRequest } from "../../../protocol/approvals.js";
import type { NetworkBlocked, NetworkUsage } from "../../../protocol/network-activity.js";
import type { SessionNetworkLink } from "./project-network.js";

/** What of a session's tunnel the link uses. */
export interface NetworkTunnel {
  approval(approvalId: string, agent: AgentRuntime, request: ApprovalRequest): Promise<ApprovalDecision>;
  cancelApproval(approvalId: string, reason: string): void;
  networkBlocked(event: NetworkBlocked): void;
  reportNetwork(usage: NetworkUsage): void;
}

export function sessionNetworkLink(tunnel: NetworkTunnel, runtime: () => AgentRuntime): SessionNetworkLink {
  return {
    ask(request, signal) {
      const approvalId = `apr_net_${randomUUID().replaceAll("-", "")}`;
      const decision = tunnel.approval(approvalId, runtime(), request);
      const onAbort = () => tunnel.cancelApproval(approvalId, "the connection that asked went away");
      if (signal.aborted) onAbort();
      else signal.addEventListener("abort", onAbort, { once: true });
      return decision.finally(() => signal.removeEventListener("abort", onAbort));
    },
    blocked: (event) => tunnel.networkBlocked(event),
    usage: (report) => tunnel.reportNetwork(report),
  };
}
