// tasks-client.mjs MODE URL: drives the weather example's task tool, get_climate_report, at URL
// with the official TypeScript SDK's experimental tasks client (client.experimental.tasks,
// spec 2025-11-25, Tasks) over Streamable HTTP, and prints one JSON summary line on stdout.
//
// MODE "complete": the tool is called with callToolStream, which learns from tools/list that
// the tool supports tasks (execution.taskSupport "optional") and so sends params.task; the
// task is created, polled with tasks/get until it completes, and its result collected with
// tasks/result. The progress notifications (the progress token stays valid for the task's
// life) and notifications/tasks/status seen on the way are recorded, and the result is then
// fetched again with getTaskResult, and the task looked up with getTask and listTasks. The Go
// test compares the result with what the Go handler returns. Then a call whose handler fails
// (an empty city) is started with an explicit TTL: its task ends failed, and getTaskResult
// returns the tool error.
//
// MODE "cancel": the task is cancelled with tasks/cancel once it is seen working; the stream
// ends with an error, and getTask then reports the status cancelled.
//
// The client enforces strict capabilities, so a task-augmented tools/call is only sent if the
// server declares tasks.requests.tools.call (an object). Any failed check makes it print the
// summary with "ok": false and exit 1.
import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, TaskStatusNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const DEADLINE_MS = Number(process.env.INTEROP_DEADLINE_MS ?? 60_000);
const TOOL = 'get_climate_report';
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

const [mode, url] = process.argv.slice(2);

const summary = {
  ok: false,
  sdkVersion: sdkVersion(),
  mode: mode ?? null,
  protocolVersion: null,
  taskSupport: null,
  taskId: null,
  created: null, // the task of the CreateTaskResult
  statuses: [], // the status of each tasks/get the stream made, in order
  statusNotifications: [], // notifications/tasks/status: "status message"
  progress: [], // notifications/progress: "progress/total message"
  messages: [], // the types of the messages callToolStream yielded, in order
  result: null, // the CallToolResult the stream collected
  resultAgain: null, // the same task's result, through getTaskResult
  finalTask: null, // getTask after the stream ended
  listed: false, // listTasks returned the task
  cancelResult: null, // what tasks/cancel returned
  streamError: null, // the error the stream ended with, if any
  toolErrorTask: null, // "complete": the task of a call whose handler fails
  toolErrorStatus: null, // tasks/get after it ended
  toolError: null, // its result, through getTaskResult
  checks: 0,
  error: null,
};

function sdkVersion() {
  const u = new URL('./node_modules/@modelcontextprotocol/sdk/package.json', import.meta.url);
  return JSON.parse(readFileSync(u, 'utf8')).version;
}

class CheckError extends Error {}

function check(cond, msg) {
  summary.checks++;
  if (!cond) throw new CheckError(msg);
}

// checkTask checks the members of a Task (spec 2025-11-25, Tasks, Task).
function checkTask(task, what) {
  check(typeof task === 'object' && task !== null, `${what}: no task`);
  check(typeof task.taskId === 'string' && task.taskId !== '', `${what}: taskId ${JSON.stringify(task.taskId)}`);
  check(typeof task.createdAt === 'string' && !Number.isNaN(Date.parse(task.createdAt)), `${what}: createdAt ${task.createdAt}`);
  check(typeof task.lastUpdatedAt === 'string' && !Number.isNaN(Date.parse(task.lastUpdatedAt)), `${what}: lastUpdatedAt ${task.lastUpdatedAt}`);
  check(task.ttl === null || (typeof task.ttl === 'number' && task.ttl > 0), `${what}: ttl ${task.ttl}`);
}

async function connect() {
  const client = new Client(
    { name: 'protomcp-interop-tasks', version: '0' },
    { capabilities: {}, enforceStrictCapabilities: true },
  );
  client.setNotificationHandler(TaskStatusNotificationSchema, (n) => {
    summary.statusNotifications.push(`${n.params.status} ${n.params.statusMessage ?? ''}`.trim());
  });
  const transport = new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport);
  summary.protocolVersion = transport.protocolVersion ?? null;
  const caps = client.getServerCapabilities();
  check(typeof caps?.tasks?.requests?.tools?.call === 'object', `server tasks capability ${JSON.stringify(caps?.tasks)}`);
  check(typeof caps.tasks.list === 'object' && typeof caps.tasks.cancel === 'object', `server tasks capability ${JSON.stringify(caps.tasks)}`);

  // tools/list fills the client's cache of task tools, which callToolStream consults.
  const { tools } = await client.listTools();
  const tool = tools.find((t) => t.name === TOOL);
  check(tool !== undefined, `no ${TOOL} in tools/list`);
  summary.taskSupport = tool.execution?.taskSupport ?? null;
  check(summary.taskSupport === 'optional', `${TOOL} execution ${JSON.stringify(tool.execution)}`);
  return { client, transport };
}

async function complete(client) {
  const tasks = client.experimental.tasks;
  const stream = tasks.callToolStream({ name: TOOL, arguments: { city: 'Tokyo', years: 4 } }, CallToolResultSchema, {
    onprogress: (p) => summary.progress.push(`${p.progress}/${p.total} ${p.message ?? ''}`.trim()),
    timeout: DEADLINE_MS,
  });
  for await (const msg of stream) {
    summary.messages.push(msg.type);
    switch (msg.type) {
      case 'taskCreated':
        checkTask(msg.task, 'CreateTaskResult');
        summary.created = msg.task;
        summary.taskId = msg.task.taskId;
        check(!TERMINAL.has(msg.task.status), `created task is already ${msg.task.status}`);
        break;
      case 'taskStatus':
        checkTask(msg.task, 'tasks/get');
        check(msg.task.taskId === summary.taskId, `tasks/get answered for ${msg.task.taskId}`);
        summary.statuses.push(msg.task.status);
        break;
      case 'result':
        summary.result = msg.result;
        break;
      case 'error':
        summary.streamError = String(msg.error?.message ?? msg.error);
        break;
    }
  }
  check(summary.streamError === null, `callToolStream ended with an error: ${summary.streamError}`);
  check(summary.messages[0] === 'taskCreated' && summary.messages.at(-1) === 'result', `stream messages ${summary.messages}`);
  check(summary.statuses.at(-1) === 'completed', `statuses ${summary.statuses}`);
  check(summary.statuses.includes('working'), `statuses ${summary.statuses}: the task was never seen working`);
  check(summary.result.isError !== true && typeof summary.result.structuredContent === 'object', `result ${JSON.stringify(summary.result)}`);

  summary.resultAgain = await tasks.getTaskResult(summary.taskId, CallToolResultSchema);
  summary.finalTask = await tasks.getTask(summary.taskId);
  check(summary.finalTask.status === 'completed', `getTask after the result: ${summary.finalTask.status}`);
  const listed = await tasks.listTasks();
  summary.listed = listed.tasks.some((t) => t.taskId === summary.taskId);
  check(summary.listed, `tasks/list does not list ${summary.taskId}`);

  // A handler's error is a tool error, a result with isError: the task ends failed, with a
  // status message, and tasks/result returns that result (spec 2025-11-25, Tasks, "Task
  // Execution Errors"). The task's TTL is the one asked for.
  const failing = tasks.callToolStream({ name: TOOL, arguments: { city: ' ' } }, CallToolResultSchema, {
    task: { ttl: 120_000 },
    timeout: DEADLINE_MS,
  });
  let failedWith = null;
  for await (const msg of failing) {
    if (msg.type === 'taskCreated') summary.toolErrorTask = msg.task;
    if (msg.type === 'result') check(false, `a failed task's stream yielded a result: ${JSON.stringify(msg.result)}`);
    if (msg.type === 'error') failedWith = String(msg.error?.message ?? msg.error);
  }
  check(summary.toolErrorTask?.ttl === 120_000, `task with ttl 120000: ${JSON.stringify(summary.toolErrorTask)}`);
  check(/failed/.test(failedWith ?? ''), `the failed task's stream ended with ${failedWith}`);
  summary.toolErrorStatus = await tasks.getTask(summary.toolErrorTask.taskId);
  check(summary.toolErrorStatus.status === 'failed', `tool error task ended ${summary.toolErrorStatus.status}`);
  summary.toolError = await tasks.getTaskResult(summary.toolErrorTask.taskId, CallToolResultSchema);
  check(summary.toolError.isError === true, `tool error result ${JSON.stringify(summary.toolError)}`);
}

async function cancel(client) {
  const tasks = client.experimental.tasks;
  const stream = tasks.callToolStream({ name: TOOL, arguments: { city: 'Paris', years: 10 } }, CallToolResultSchema, {
    timeout: DEADLINE_MS,
  });
  for await (const msg of stream) {
    summary.messages.push(msg.type);
    switch (msg.type) {
      case 'taskCreated':
        checkTask(msg.task, 'CreateTaskResult');
        summary.created = msg.task;
        summary.taskId = msg.task.taskId;
        break;
      case 'taskStatus':
        summary.statuses.push(msg.task.status);
        if (msg.task.status === 'working' && summary.cancelResult === null) {
          summary.cancelResult = await tasks.cancelTask(summary.taskId);
        }
        break;
      case 'result':
        summary.result = msg.result;
        break;
      case 'error':
        summary.streamError = String(msg.error?.message ?? msg.error);
        break;
    }
  }
  check(summary.cancelResult !== null, `the task was never seen working: statuses ${summary.statuses}`);
  checkTask(summary.cancelResult, 'tasks/cancel');
  check(summary.cancelResult.status === 'cancelled', `tasks/cancel answered status ${summary.cancelResult.status}`);
  check(summary.result === null, `a cancelled task gave a result: ${JSON.stringify(summary.result)}`);
  check(summary.statuses.at(-1) === 'cancelled', `statuses ${summary.statuses}`);
  check(/was cancelled/.test(summary.streamError ?? ''), `stream error ${summary.streamError}`);
  summary.finalTask = await tasks.getTask(summary.taskId);
  check(summary.finalTask.status === 'cancelled', `getTask after tasks/cancel: ${summary.finalTask.status}`);
}

async function main() {
  check(mode === 'complete' || mode === 'cancel', `usage: tasks-client.mjs complete|cancel URL (mode ${mode})`);
  check(typeof url === 'string', 'usage: tasks-client.mjs complete|cancel URL');
  const { client, transport } = await connect();
  try {
    if (mode === 'complete') await complete(client);
    else await cancel(client);
  } finally {
    await transport.terminateSession().catch(() => {});
    await client.close();
  }
  summary.ok = true;
}

const deadline = setTimeout(() => {
  summary.error = `deadline of ${DEADLINE_MS}ms passed`;
  console.log(JSON.stringify(summary));
  process.exit(1);
}, DEADLINE_MS);

try {
  await main();
} catch (err) {
  summary.error = err instanceof CheckError ? `check failed: ${err.message}` : String(err?.stack ?? err);
}
clearTimeout(deadline);
console.log(JSON.stringify(summary));
process.exit(summary.ok ? 0 : 1);
