import { describe, expect, it } from "vitest";
import {
  type ApprovalPolicy,
  ApprovalPolicySchema,
  type ApprovalRequest,
  ApprovalRequestSchema,
  allowanceCovers,
  evaluatePolicies,
  evaluatePolicy,
  policiesAsk,
} from "../../protocol/approvals.js";

const shell = (command: string): ApprovalRequest => ({ kind: "shell", command, summary: `run ${command}` });
const edit = (path: string): ApprovalRequest => ({ kind: "edit", path, summary: `edit ${path}` });
const tool = (name: string): ApprovalRequest => ({
  kind: "mcp_tool",
  tool: name,
  arguments: {},
  summary: name,
});

const rules: ApprovalPolicy = {
  rules: [
    { kind: "shell", match: "git push*", action: "ask" },
    { kind: "shell", match: "rm -rf *", action: "deny" },
    { kind: "shell", action: "allow" },
    { kind: "edit", match: "/workspace/default/**", action: "allow" },
    { kind: "mcp_tool", match: "billing_*", action: "ask" },
  ],
  default: "deny",
};

describe("approval policy", () => {
  it("auto allows and ask asks every request, of every kind", () => {
    for (const request of [shell("ls"), edit("/etc/passwd"), tool("billing_charge")]) {
      expect(evaluatePolicy("auto", request).action).toBe("allow");
      expect(evaluatePolicy("ask", request).action).toBe("ask");
    }
  });

  it("rules: the first that matches decides, and says which rule and pattern it was", () => {
    expect(evaluatePolicy(rules, shell("git push --force origin main"))).toEqual({
      action: "ask",
      rule: 0,
      match: "git push*",
    });
    expect(evaluatePolicy(rules, shell("rm -rf /tmp/x/y"))).toMatchObject({ action: "deny", rule: 1 });
    expect(evaluatePolicy(rules, shell("ls -la"))).toEqual({ action: "allow", rule: 2, match: null });
    expect(evaluatePolicy(rules, edit("/workspace/default/src/a.ts"))).toMatchObject({
      action: "allow",
      rule: 3,
    });
    expect(evaluatePolicy(rules, tool("billing_charge"))).toMatchObject({ action: "ask", rule: 4 });
  });

  it("rules: a request no rule matches gets the default", () => {
    expect(evaluatePolicy(rules, edit("/etc/passwd"))).toEqual({ action: "deny", rule: null, match: null });
    expect(evaluatePolicy(rules, tool("oubliette_session"))).toMatchObject({ action: "deny", rule: null });
    expect(evaluatePolicy({ rules: [], default: "ask" }, shell("ls")).action).toBe("ask");
  });

  it("a shell pattern's * matches across spaces and slashes; a path pattern's * stays in its directory", () => {
    const policy: ApprovalPolicy = {
      rules: [
        { kind: "shell", match: "*curl *", action: "deny" },
        { kind: "edit", match: "/workspace/*.md", action: "allow" },
      ],
      default: "ask",
    };
    expect(evaluatePolicy(policy, shell("cd /tmp && curl https://x.example/a")).action).toBe("deny");
    expect(evaluatePolicy(policy, edit("/workspace/README.md")).action).toBe("allow");
    expect(evaluatePolicy(policy, edit("/workspace/docs/README.md")).action).toBe("ask");
  });

  it("several policies: the strictest verdict wins, so a session is never looser than its project", () => {
    const project: ApprovalPolicy = {
      rules: [{ kind: "shell", match: "git push*", action: "deny" }],
      default: "allow",
    };
    // The session tries to allow everything: the project's deny still holds.
    expect(evaluatePolicies([project, "auto"], shell("git push origin main")).action).toBe("deny");
    // The session asks more: its ask wins over the project's allow.
    expect(evaluatePolicies([project, "ask"], shell("ls")).action).toBe("ask");
    expect(evaluatePolicies([], shell("ls")).action).toBe("allow");
    expect(policiesAsk(["auto"])).toBe(false);
    expect(policiesAsk(["auto", project])).toBe(true);
  });

  it("an allow_session allowance covers its kind and pattern only", () => {
    expect(allowanceCovers({ kind: "shell", match: null }, shell("anything at all"))).toBe(true);
    expect(allowanceCovers({ kind: "shell", match: null }, edit("/a"))).toBe(false);
    expect(allowanceCovers({ kind: "shell", match: "git push*" }, shell("git push origin x"))).toBe(true);
    expect(allowanceCovers({ kind: "shell", match: "git push*" }, shell("git pull"))).toBe(false);
  });

  it("parsing names the bad rule and field", () => {
    const bad = ApprovalPolicySchema.safeParse({
      rules: [
        { kind: "shell", action: "allow" },
        { kind: "shel", action: "ask" },
      ],
    });
    expect(bad.success).toBe(false);
    const union = bad.error?.issues[0];
    expect(union?.code).toBe("invalid_union");
    const paths = union?.code === "invalid_union" ? union.errors.flat().map((i) => i.path.join(".")) : [];
    expect(paths).toContain("rules.1.kind");
    expect(ApprovalPolicySchema.safeParse({ rules: [{ kind: "shell", action: "maybe" }] }).success).toBe(
      false,
    );
    expect(
      ApprovalPolicySchema.safeParse({ rules: [{ kind: "shell", action: "ask", extra: 1 }] }).success,
    ).toBe(false);
    expect(ApprovalPolicySchema.safeParse("sometimes").success).toBe(false);
    expect(ApprovalPolicySchema.parse({ rules: [] })).toEqual({ rules: [], default: "ask" });
  });

  it("a request names what its kind is about", () => {
    expect(ApprovalRequestSchema.safeParse({ kind: "shell", summary: "x" }).success).toBe(false);
    expect(ApprovalRequestSchema.safeParse({ kind: "edit", command: "ls", summary: "x" }).success).toBe(
      false,
    );
    expect(ApprovalRequestSchema.safeParse({ kind: "mcp_tool", tool: "a_b", summary: "x" }).success).toBe(
      true,
    );
  });
});
