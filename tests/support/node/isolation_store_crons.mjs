// Two users' store items and crons through the official JS SDK: bob reaches none of alice's.
// Usage: node --input-type=module - <service url> < isolation_store_crons.mjs, run in the
// install dir of scripts/node-sdk; prints one JSON line of what it saw.
import { Client } from "@langchain/langgraph-sdk";

const url = process.argv[process.argv.length - 1];
const headersOf = (token) => ({ Authorization: `Bearer ${token}` });
const as = (token) => new Client({ apiUrl: url, defaultHeaders: headersOf(token) });
const alice = as("token-alice");
const bob = as("token-bob");
const NEVER = "0 0 1 1 *";

async function statusOf(call) {
  try {
    await call();
    return 200;
  } catch (err) {
    return err.status ?? String(err);
  }
}

async function getCron(token, cronId) {  // the JS SDK has no crons.get; the route is the same
  const response = await fetch(`${url}/runs/crons/${cronId}`, { headers: headersOf(token) });
  return { status: response.status, text: await response.text() };
}

await alice.store.putItem(["notes"], "n1", { text: "salary review" });
const thread = await alice.threads.create();
const cron = await alice.crons.create("agent", { schedule: NEVER, input: { goal: "salary review" } });
const onThread = await alice.crons.createForThread(thread.thread_id, "agent", { schedule: NEVER });

const bobRead = [];
for (const ns of [["notes"], ["alice", "notes"]]) {
  bobRead.push(await bob.store.getItem(ns, "n1"));
  await bob.store.putItem(ns, "n1", { text: "overwritten" });
  await bob.store.deleteItem(ns, "n1");
  bobRead.push(...(await bob.store.searchItems(ns)).items);
}
const bobGet = await getCron("token-bob", cron.cron_id);
const seen = {
  aliceNamespace: (await alice.store.getItem(["notes"], "n1")).namespace,
  bobRead: JSON.stringify(bobRead),
  bobNamespaces: (await bob.store.listNamespaces()).namespaces,
  bobFiltered: (await bob.store.searchItems(["alice"], { filter: { text: "salary review" } })).items,
  aliceValue: (await alice.store.getItem(["notes"], "n1")).value,
  cronOwner: cron.metadata.owner,
  getCron: bobGet.status,
  getCronText: bobGet.text,
  updateCron: await statusOf(() => bob.crons.update(cron.cron_id, { schedule: "* * * * *" })),
  deleteCron: await statusOf(() => bob.crons.delete(cron.cron_id)),
  deleteThreadCron: await statusOf(() => bob.crons.delete(onThread.cron_id)),
  cronOnHerThread: await statusOf(() => bob.crons.createForThread(thread.thread_id, "agent", { schedule: NEVER })),
  bobCrons: (await bob.crons.search()).map((c) => c.cron_id),
  bobCount: await bob.crons.count(),
  aliceCrons: (await alice.crons.search()).map((c) => c.cron_id).sort(),
  aliceCronStill: (await getCron("token-alice", cron.cron_id)).status,
  expectedCrons: [cron.cron_id, onThread.cron_id].sort(),
};
console.log(JSON.stringify(seen));
