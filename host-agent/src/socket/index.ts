export { ConfigTooLargeError, RelaySocketServer } from "./relay-socket-server.js";
export type { CallerToolCall, RelayHandlers, RelaySocketServerOptions } from "./types.js";
