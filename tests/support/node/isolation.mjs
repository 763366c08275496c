// Two users through the official JS SDK: bob gets 404 for everything of alice's.
// Usage: node --input-type=module - <service url> < isolation.mjs, run in the install dir
// of scripts/node-sdk; prints one JSON line of what it saw.
import { Client } from "@langchain/langgraph-sdk";

const url = process.argv[process.argv.length - 1];
const as = (token) => new Client({ apiUrl: url, defaultHeaders: { Authorization: `Bearer ${token}` } });
const alice = as("token-alice");
const bob = as("token-bob");
const EMAIL = 'Email li@example.com with the subject "Weekly report" saying the report is ready.';

async function statusOf(call) {
  try {
    const result = await call();
    if (result && typeof result[Symbol.asyncIterator] === "function") {
      for await (const _ of result) { /* drain */ }
    }
    return 200;
  } catch (err) {
    return err.status ?? String(err);
  }
}

const thread = await alice.threads.create({ metadata: { topic: "salary review" } });
const tid = thread.thread_id;
const first = await alice.runs.wait(tid, "agent", { input: { goal: EMAIL } });
const call = first.__interrupt__[0].value.calls[0];
const [run] = await alice.runs.list(tid);
const resume = { resume: { [call.id]: { action: "approve", digest: call.digest } } };

const seen = {
  owner: thread.metadata.owner,
  read: await statusOf(() => bob.threads.get(tid)),
  state: await statusOf(() => bob.threads.getState(tid)),
  history: await statusOf(() => bob.threads.getHistory(tid)),
  listRuns: await statusOf(() => bob.runs.list(tid)),
  getRun: await statusOf(() => bob.runs.get(tid, run.run_id)),
  join: await statusOf(() => bob.runs.join(tid, run.run_id)),
  resume: await statusOf(() => bob.runs.wait(tid, "agent", { command: resume })),
  stream: await statusOf(() => bob.runs.stream(tid, "agent", { input: { goal: "hi" } })),
  cancel: await statusOf(() => bob.runs.cancel(tid, run.run_id)),
  delete: await statusOf(() => bob.threads.delete(tid)),
  bobSearch: (await bob.threads.search()).map((t) => t.thread_id),
  aliceSearch: (await alice.threads.search()).map((t) => t.thread_id),
  aliceResume: (await alice.runs.wait(tid, "agent", { command: resume })).answer ?? null,
  tid,
};
console.log(JSON.stringify(seen));
