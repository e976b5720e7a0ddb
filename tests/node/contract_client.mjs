// Tool calls through the official TypeScript SDK client, for tests/test_contract.py.
//
// The plan arrives as JSON on stdin: {"server": {"command", "args", "cwd", "env"} or {"url"},
// "enable": [toolsets] (optional), "calls": [{"name", "arguments"}]}. The client lists the tools first (so it validates every
// structured result against the tool's outputSchema, as it does for any caller), then makes each
// call; the answer, one JSON object on stdout, says per call whether the client accepted it.
import { readFileSync } from "node:fs";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const plan = JSON.parse(readFileSync(0, "utf8"));
const transport = plan.server.url
  ? new StreamableHTTPClientTransport(new URL(plan.server.url))
  : new StdioClientTransport({ ...plan.server, stderr: "ignore" });
const client = new Client({ name: "codeward-contract", version: "1.0.0" });
await client.connect(transport);

// "enable": toolsets to enable first on a lean server; the client waits for tools/list_changed and
// lists again, so it validates every newly listed tool's results too.
let lean = null;
let told = false;
if (plan.enable) {
  let heard;
  const notified = new Promise((resolve) => { heard = resolve; });
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => { told = true; heard(); });
  lean = (await client.listTools()).tools.map((tool) => tool.name);
  await client.callTool({ name: "toolsets", arguments: { action: "enable", names: plan.enable } });
  await Promise.race([notified, new Promise((resolve) => setTimeout(resolve, 60_000))]);
}
const listed = await client.listTools();
const results = [];
for (const call of plan.calls) {
  try {
    const result = await client.callTool({ name: call.name, arguments: call.arguments }, undefined,
                                         { timeout: 600_000 });
    const text = (result.content ?? []).map((block) => block.text ?? "").join("\n");
    results.push({ name: call.name, accepted: true, isError: Boolean(result.isError),
                   structured: result.structuredContent !== undefined, text: text.slice(0, 500) });
  } catch (error) {
    results.push({ name: call.name, accepted: false, error: String(error?.message ?? error) });
  }
}
const answer = {
  protocolVersion: transport.protocolVersion ?? null,
  lean,
  told,
  tools: listed.tools.map((tool) => ({ name: tool.name, hasOutputSchema: Boolean(tool.outputSchema) })),
  results,
};
process.stdout.write(JSON.stringify(answer) + "\n");
await client.close();
