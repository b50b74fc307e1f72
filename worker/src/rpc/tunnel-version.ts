import { RpcError, RpcErrorCode } from "../../../protocol/rpc/errors.js";
import { TUNNEL_PROTOCOL_VERSION } from "../../../protocol/tunnel.js";

/**
 * Refuses a tunnel hello of another protocol version: the answer says why, then the connection
 * closes (4002) so the host-agent does not go on speaking a language we do not.
 */
export function requireTunnelVersion(ws: WebSocket, version: number): void {
  if (version === TUNNEL_PROTOCOL_VERSION) return;
  setTimeout(() => ws.close(4002, "unsupported tunnel protocol version"), 0);
  throw new RpcError(
    RpcErrorCode.ServerError,
    `tunnel protocol ${version} is not ${TUNNEL_PROTOCOL_VERSION}`,
    {
      reason: "unsupported_version",
    },
  );
}
