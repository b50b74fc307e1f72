/**
 * The docker project's setup file: each Docker test file waits here until docker-setup has the
 * engine and the images ready (they are prepared while the cheaper projects run), and fails at
 * once, with the reason, if it could not prepare them.
 */
import { inject } from "vitest";
import { waitForDocker } from "./docker-context.js";

// A bare machine installs Docker and builds every image: allow for it (the hook timeout's bound).
await waitForDocker(inject("dockerReadyFile"), 900_000);
