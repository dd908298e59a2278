// yoi's MCP server driven by the official TypeScript SDK (npm `@modelcontextprotocol/sdk`,
// pinned in .ci/run), over streamable HTTP (a person's token) and over stdio through `yoi mcp`
// (the agent's claim token). Run by crates/yoi-cli/tests/mcp.rs with everything in the
// environment; YOI_MCP_TS names the folder the SDK is installed in. Exits non-zero on the first
// check that does not hold.

import assert from "node:assert/strict";
import path from "node:path";
import { pathToFileURL } from "node:url";

const E = process.env;
const sdk = (p) =>
  import(pathToFileURL(path.join(E.YOI_MCP_TS, "node_modules/@modelcontextprotocol/sdk/dist/esm", p)).href);
const { Client } = await sdk("client/index.js");
const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
const { StdioClientTransport } = await sdk("client/stdio.js");

const text = (r) => {
  assert.equal(r.content.length, 1);
  assert.equal(r.content[0].type, "text");
  return r.content[0].text;
};

async function refusedAsUnknown(client, name, args) {
  await assert.rejects(client.callTool({ name, arguments: args }), (e) => {
    assert.equal(e.code, -32602, String(e));
    assert.match(e.message, new RegExp(name));
    return true;
  });
}

// A person over streamable HTTP.
{
  const client = new Client({ name: "ts-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(E.YOI_MCP_URL), {
    requestInit: { headers: { Authorization: `Bearer ${E.HUMAN}` } },
  });
  await client.connect(transport);
  assert.equal(client.getServerVersion().name, "yoi");
  const names = (await client.listTools()).tools.map((t) => t.name).sort();
  assert.deepEqual(names, ["add_relation", "comment", "create_ticket", "edit_ticket", "inbox",
    "list_tickets", "mark_ready", "show_ticket"]);
  const made = text(await client.callTool({ name: "create_ticket", arguments: { title: "From TypeScript" } }));
  assert.match(made, /^created \S+ \(planning\)$/);
  const id = made.split(" ")[1];
  const shown = text(await client.callTool({ name: "show_ticket", arguments: { id } }));
  assert.ok(shown.startsWith(`${id} [planning] From TypeScript`), shown);
  const bad = await client.callTool({ name: "mark_ready", arguments: { id } });
  assert.equal(bad.isError, true, text(bad));
  const missing = await client.callTool({ name: "comment", arguments: { id } });
  assert.equal(missing.isError, true);
  assert.match(text(missing), /`body` is required/);
  await refusedAsUnknown(client, "queue", { id });
  const resources = (await client.listResources()).resources.map((r) => r.uri);
  assert.ok(resources.includes("skill://deploy-notes/SKILL.md"), resources.join(" "));
  await client.close();
}

// The agent over stdio, through `yoi mcp` with its claim token.
{
  const client = new Client({ name: "ts-test", version: "1.0.0" });
  const transport = new StdioClientTransport({
    command: E.YOI_BIN,
    args: ["mcp"],
    cwd: E.YOI_REPO,
    env: { ...E, YOI_TOKEN: E.AGENT },
  });
  await client.connect(transport);
  const names = (await client.listTools()).tools.map((t) => t.name).sort();
  assert.deepEqual(names, ["activate_skill", "ask_question", "my_ticket", "post_note",
    "propose_ticket", "read_packet"]);
  const mine = text(await client.callTool({ name: "my_ticket", arguments: {} }));
  assert.ok(mine.startsWith(`${E.OWN} [inprogress]`), mine);
  const noted = text(await client.callTool({ name: "post_note", arguments: { body: "Noted from TypeScript." } }));
  assert.ok(noted.startsWith(`comment ${E.OWN}`), noted);
  const bad = await client.callTool({ name: "my_ticket", arguments: { id: E.OTHER } });
  assert.equal(bad.isError, true);
  await refusedAsUnknown(client, "create_ticket", { title: "x" });
  const read = await client.readResource({ uri: "skill://deploy-notes/references/format.md" });
  assert.equal(read.contents[0].text, "One line per change.\n");
  await client.close();
}

console.log(JSON.stringify({ typescript: "ok" }));
