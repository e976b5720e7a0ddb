// A lean codeward session through the official TypeScript SDK client, for tests/test_lean_listing.py.
//
// The plan arrives as JSON on stdin: {"server": {"command", "args", "cwd", "env"}, "enable": toolset,
// "call": {"name", "arguments"} (a tool of that toolset), "through": {"name", "arguments"} (a tool of a
// toolset left disabled)}. The client lists, enables the toolset with `toolsets`, waits for
// notifications/tools/list_changed, lists again and calls the newly listed tool (the client validates its
// structured result against the outputSchema it just listed); then it runs `through` with `call_tool`, as
// a client that never lists again would. One JSON object on stdout says what it saw.
import { readFileSync } from "node:fs";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const plan = JSON.parse(readFileSync(0, "utf8"));
const transport = new StdioClientTransport({ ...plan.server, stderr: "ignore" });
const client = new Client({ name: "codeward-lean", version: "1.0.0" });
let told = 0;
let heard;
const notified = new Promise((resolve) => { heard = resolve; });
client.setNotificationHandler(ToolListChangedNotificationSchema, () => { told += 1; heard(); });
await client.connect(transport);

const names = async () => (await client.listTools()).tools.map((tool) => tool.name);
const text = (result) => (result.content ?? []).map((block) => block.text ?? "").join("\n");
const before = await names();
const enabled = await client.callTool({ name: "toolsets", arguments: { action: "enable", names: [plan.enable] } });
const timedOut = await Promise.race([notified.then(() => false),
                                     new Promise((resolve) => setTimeout(() => resolve(true), 30_000))]);
const after = await names();
const called = await client.callTool(plan.call, undefined, { timeout: 120_000 });
const through = await client.callTool({ name: "call_tool", arguments: plan.through }, undefined, { timeout: 120_000 });
process.stdout.write(JSON.stringify({
  capabilities: client.getServerCapabilities(),
  before, after, told, timedOut,
  enabled: { isError: Boolean(enabled.isError), text: text(enabled) },
  called: { isError: Boolean(called.isError), structured: called.structuredContent ?? null, text: text(called) },
  through: { isError: Boolean(through.isError), text: text(through) },
}) + "\n");
await client.close();
