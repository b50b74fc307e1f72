/**
 * The host id `npm start` gives its host-agent: stable for one state directory (one checkout by
 * default), different between two, so two stacks on one Docker Engine never remove each other's
 * containers.
 */
import { createHash } from "node:crypto";
import { expect, it } from "vitest";
import { localHostId } from "../../scripts/stack/host-id.js";

it("is local- and the first 10 hex digits of the path's SHA-256", () => {
  const path = "/home/ann/src/oubliette/.oubliette/dev";
  const hash = createHash("sha256").update(path).digest("hex");
  expect(localHostId(path)).toBe(`local-${hash.slice(0, 10)}`);
  expect(localHostId(path)).toMatch(/^local-[0-9a-f]{10}$/);
});

it("is the same on every start from one directory, however the path is spelled", () => {
  const id = localHostId("/srv/a/.oubliette/dev");
  expect(localHostId("/srv/a/.oubliette/dev")).toBe(id);
  expect(localHostId("/srv/a/.oubliette/dev/")).toBe(id);
  expect(localHostId("/srv//a/./.oubliette/dev")).toBe(id);
});

it("differs between two checkouts", () => {
  expect(localHostId("/srv/a/.oubliette/dev")).not.toBe(localHostId("/srv/b/.oubliette/dev"));
});

it("is never the shared 'local' of old", () => {
  expect(localHostId("/")).not.toBe("local");
});

it("refuses a relative path (its meaning would depend on the working directory)", () => {
  expect(() => localHostId(".oubliette/dev")).toThrow(/absolute/);
});
