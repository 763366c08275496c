// The JS SDK (@langchain/langgraph-sdk) against graphwright serve: stream messages-tuple
// tokens, drop a joined stream and join again from its last event id, answer a gate.
// Prints one JSON object with what it saw; tests/server/test_node_sdk.py checks it.
import { Client } from "@langchain/langgraph-sdk";

const client = new Client({ apiUrl: process.argv[2] });
const out = {};

const chat = await client.threads.create();
const tokens = [];
for await (const part of client.runs.stream(chat.thread_id, "chat", {
  input: { messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }] },
  streamMode: "messages-tuple",
})) {
  if (part.event === "messages" && part.data[0].content) tokens.push(part.data[0].content);
}
out.tokens = tokens;

const other = await client.threads.create();
const run = await client.runs.create(other.thread_id, "chat", {
  input: { messages: [{ role: "user", content: "hi" }] }, streamMode: ["messages-tuple"], streamResumable: true,
});
const before = [];
for await (const part of client.runs.joinStream(other.thread_id, run.run_id)) {
  before.push(part);
  if (before.length === 4) break;  // the connection drops here
}
const after = [];
for await (const part of client.runs.joinStream(other.thread_id, run.run_id, { lastEventId: before.at(-1).id })) {
  after.push(part);
}
const parts = [...before, ...after];
out.joinedIds = parts.map((p) => p.id);
out.joinedTokens = parts.filter((p) => p.event === "messages" && p.data[0].content).map((p) => p.data[0].content);

const gated = await client.threads.create();
const first = await client.runs.wait(gated.thread_id, "interrupting", { input: { steps: [] } });
out.interrupt = first.__interrupt__;
const done = await client.runs.wait(gated.thread_id, "interrupting", { command: { resume: "yes" } });
out.steps = done.steps;
out.threadStatus = (await client.threads.get(gated.thread_id)).status;
console.log(JSON.stringify(out));
