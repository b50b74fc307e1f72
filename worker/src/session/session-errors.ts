import { AppError } from "../errors.js";
import type { SessionRecord } from "./session-record.js";

export class SessionNotFoundError extends AppError {
  constructor() {
    super("not_found", "session not found");
  }
}

export class NotOwnerError extends AppError {
  constructor(record: SessionRecord, what: string) {
    super("not_owner", `only the caller that owns session ${record.sessionId} may ${what} it`);
  }
}

export class SessionEndedError extends AppError {
  constructor(record: SessionRecord) {
    super("session_ended", `session ${record.sessionId} is ${record.status}`);
  }
}
