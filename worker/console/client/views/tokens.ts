import { isAdmin } from "../access.js";
import { actionSchema, callObject } from "../api.js";
import { h, replace, rowButton } from "../dom.js";
import { errorSlot, guarded, messageOf } from "../errors.js";
import { when } from "../format.js";
import { fieldForm, fieldsFromJsonSchema } from "../forms.js";
import { type JsonRecord, list, str, strings } from "../json.js";
import { dataTable } from "../table.js";
import { heading, type View } from "../view.js";

interface Token {
  token_id: string;
  name: string;
  kind: string;
  scopes: string[];
  host_id: string | null;
  prefix: string | null;
  status: string;
  expires_at: string | null;
  last_used_at: string | null;
}

interface Grant {
  grant_id: string;
  client_name: string;
  scopes: string[];
  signed_in_as: string | null;
  status: string;
  last_used_at: string | null;
}

function parseToken(r: JsonRecord): Token | null {
  const id = str(r, "token_id");
  if (id === null) return null;
  return {
    token_id: id,
    name: str(r, "name") ?? "",
    kind: str(r, "kind") ?? "caller",
    scopes: strings(r, "scopes"),
    host_id: str(r, "host_id"),
    prefix: str(r, "prefix"),
    status: str(r, "status") ?? "unknown",
    expires_at: str(r, "expires_at"),
    last_used_at: str(r, "last_used_at"),
  };
}

function parseGrant(r: JsonRecord): Grant | null {
  const id = str(r, "grant_id");
  if (id === null) return null;
  return {
    grant_id: id,
    client_name: str(r, "client_name") ?? str(r, "client_id") ?? "?",
    scopes: strings(r, "scopes"),
    signed_in_as: str(r, "signed_in_as"),
    status: str(r, "status") ?? "unknown",
    last_used_at: str(r, "last_used_at"),
  };
}

/** API tokens and OAuth grants (admin only): list, revoke, and create a token shown once. */
export const tokensView: View = ({ root, scope }) => {
  const errors = errorSlot();
  const rowSlot = errorSlot();
  const admin = isAdmin();
  const revokeButton = (id: string) => {
    const el: HTMLButtonElement = rowButton(
      "Revoke",
      id,
      () => {
        void guarded(rowSlot, async () => {
          await callObject("token", { action: "revoke", token_id: id });
          await load();
        }, [el]);
      },
      "danger",
    );
    return el;
  };
  const tokens = dataTable<Token>(
    "Tokens",
    [
      { header: "Token", cell: (t) => h("code", {}, t.token_id) },
      { header: "Name", cell: (t) => t.name },
      { header: "Kind", cell: (t) => (t.host_id ? `${t.kind} (${t.host_id})` : t.kind) },
      { header: "Scopes", cell: (t) => t.scopes.join(", ") || "—" },
      { header: "Status", cell: (t) => t.status },
      { header: "Expires", cell: (t) => when(t.expires_at) },
      { header: "Last used", cell: (t) => when(t.last_used_at) },
      { header: "Actions", cell: (t) => (admin && t.status === "active" ? revokeButton(t.token_id) : "") },
    ],
    (t) => t.token_id,
    "No issued tokens (the configured bootstrap tokens are not listed).",
  );
  const grants = dataTable<Grant>(
    "OAuth grants",
    [
      { header: "Client", cell: (g) => g.client_name },
      { header: "Grant", cell: (g) => h("code", {}, g.grant_id) },
      { header: "Scopes", cell: (g) => g.scopes.join(", ") || "—" },
      { header: "Signed in as", cell: (g) => g.signed_in_as ?? "—" },
      { header: "Status", cell: (g) => g.status },
      { header: "Last used", cell: (g) => when(g.last_used_at) },
      { header: "Actions", cell: (g) => (admin && g.status === "active" ? revokeButton(g.grant_id) : "") },
    ],
    (g) => g.grant_id,
    "No app has signed in with OAuth.",
  );

  const load = async () => {
    try {
      const answer = await callObject("token", { action: "list" });
      if (scope.disposed) return;
      tokens.update(list(answer, "tokens", parseToken));
      grants.update(list(answer, "grants", parseGrant));
      errors.clear();
    } catch (err) {
      if (!scope.disposed) errors.show(messageOf(err));
    }
  };

  root.append(heading("Tokens"), errors.el, rowSlot.el, tokens.el);
  if (admin) {
    // `<output>` is a live region: the new secret is announced, and never shown again.
    const secret = h("output", { "aria-label": "New token", class: "secret" });
    const place = h("div", {});
    root.append(h("h2", {}, "New token"), place, secret);
    // The form's fields come from `token create`'s own schema (the server's tool definition).
    void guarded(errors, async () => {
      const fields = fieldsFromJsonSchema(await actionSchema("token", "create"));
      if (scope.disposed) return;
      const form = fieldForm("New token", fields, "Create token", async (args) => {
        const created = await callObject("token", { action: "create", ...args });
        replace(
          secret,
          h("strong", {}, "Shown once: "),
          "store this token now; it is not shown again.",
          h("pre", {}, str(created, "token") ?? ""),
        );
        form.el.reset();
        await load();
      });
      replace(place, form.el);
    });
  }
  root.append(h("h2", {}, "OAuth grants"), grants.el);
  void load();
};
