// client.mjs URL: drives the weather example's MCP server at URL with the official TypeScript
// SDK (Client over StreamableHTTPClientTransport) and checks what comes back.
// client.mjs --stdio COMMAND ARGS...: the same, launching the server with StdioClientTransport.
//
// It lists the tools and checks their metadata and schemas, calls every tool with valid
// arguments (some with an onprogress callback, some concurrently), checks structuredContent
// and content, checks that bad calls fail the way MCP says, uses the prompt and the resource
// template that the service declares in proto (with completions) and its server-streaming
// tool, then prints one JSON summary line on stdout. Any failed check makes it print the summary with "ok": false and exit 1.
import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

const addFormats = addFormatsModule.default ?? addFormatsModule;
const DEADLINE_MS = Number(process.env.INTEROP_DEADLINE_MS ?? 60_000);

// The tools of examples/weather. Rich-content tools return content blocks, not a message, and
// so have no outputSchema.
const EXPECTED_TOOLS = {
  get_forecast: { rich: false },
  list_alerts: { rich: false },
  forecast_chart: { rich: true },
  export_forecast: { rich: false },
  get_climate_report: { rich: false },
};
const CONDITIONS = ['CONDITION_SUNNY', 'CONDITION_CLOUDY', 'CONDITION_RAIN', 'CONDITION_SNOW', 'CONDITION_STORM'];
const SEVERITIES = ['SEVERITY_MINOR', 'SEVERITY_MODERATE', 'SEVERITY_SEVERE'];
const DATE_RE = /^\d{4}-\d{2}-\d{2}$/;
const DATE_TIME_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

const summary = {
  ok: false,
  sdkVersion: sdkVersion(),
  url: process.argv[2] ?? null,
  server: null,
  protocolVersion: null,
  sessionId: false,
  tools: 0,
  toolNames: [],
  calls: 0,
  toolErrors: 0,
  protocolErrors: 0,
  progressNotifications: 0,
  prompts: [],
  resourceTemplates: [],
  streamedMessages: 0,
  checks: 0,
  error: null,
};

function sdkVersion() {
  const url = new URL('./node_modules/@modelcontextprotocol/sdk/package.json', import.meta.url);
  return JSON.parse(readFileSync(url, 'utf8')).version;
}

class CheckError extends Error {}

// Over stdio the SDK (1.32) runs notification handlers in a later microtask but settles a
// request on its response at once, and deletes the request's progress handler then: progress
// notifications that arrive in the same read as the response are dropped with "unknown
// token". Over stdio, checks that every progress notification arrived are therefore relaxed
// to checks on those that did.
let strictProgress = true;

function checkAllProgress(cond, msg) {
  if (strictProgress) check(cond, msg);
}

function check(cond, msg) {
  summary.checks++;
  if (!cond) throw new CheckError(msg);
}

function isObject(v) {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function deepEqual(a, b) {
  return JSON.stringify(canon(a)) === JSON.stringify(canon(b));
}

function canon(v) {
  if (Array.isArray(v)) return v.map(canon);
  if (isObject(v)) return Object.fromEntries(Object.keys(v).sort().map((k) => [k, canon(v[k])]));
  return v;
}

// validators compiles the tools' input schemas with a JSON Schema 2020-12 validator (the
// dialect MCP specifies), so that the arguments sent below are checked against the schema the
// server advertises, and so are a few arguments the schema must refuse.
function validators(tools) {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  const out = {};
  for (const t of tools) {
    check(t.inputSchema.$schema === undefined || t.inputSchema.$schema.includes('2020-12'), `${t.name}: inputSchema declares dialect ${t.inputSchema.$schema}, MCP's default is 2020-12`);
    out[t.name] = ajv.compile(t.inputSchema);
  }
  return out;
}

async function main() {
  const url = process.argv[2];
  if (!url) throw new CheckError('usage: node client.mjs URL | --stdio COMMAND ARGS...');
  const stdio = url === '--stdio';
  strictProgress = !stdio;

  const client = new Client({ name: 'protomcp-interop-ts-client', version: '1.0.0' });
  const transport = stdio
    ? new StdioClientTransport({ command: process.argv[3], args: process.argv.slice(4), stderr: 'inherit' })
    : new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport);
  const info = client.getServerVersion();
  summary.server = info ? { name: info.name, version: info.version } : null;
  summary.protocolVersion = transport.protocolVersion ?? null; // HTTP only: stdio has no header
  summary.sessionId = typeof transport.sessionId === 'string' && transport.sessionId.length > 0;
  check(summary.server?.name, 'server gave no serverInfo.name');
  check(stdio || summary.sessionId, 'server gave no Mcp-Session-Id');
  check(client.getServerCapabilities()?.tools, 'server did not declare the tools capability');

  await client.ping();

  // tools/list, following cursors.
  const tools = [];
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : undefined);
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  summary.tools = tools.length;
  summary.toolNames = tools.map((t) => t.name).sort();
  const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
  for (const [name, want] of Object.entries(EXPECTED_TOOLS)) {
    const t = byName[name];
    check(t, `tool ${name} not listed (got ${summary.toolNames.join(', ')})`);
    check(typeof t.description === 'string' && t.description.length > 0, `${name}: no description`);
    check(isObject(t.inputSchema) && t.inputSchema.type === 'object', `${name}: inputSchema is not an object schema`);
    if (want.rich) {
      check(t.outputSchema === undefined, `${name}: a rich-content tool should have no outputSchema`);
    } else {
      check(isObject(t.outputSchema) && t.outputSchema.type === 'object', `${name}: no object outputSchema`);
    }
    check(t.annotations?.readOnlyHint === true, `${name}: annotations.readOnlyHint is not true`);
  }
  // The listed tools are exactly the example's: a Register function adds nothing else.
  check(tools.length === Object.keys(EXPECTED_TOOLS).length, `want ${Object.keys(EXPECTED_TOOLS).length} tools, got ${tools.length}`);

  const validate = validators(tools);
  const valid = (name, args) => {
    const ok = validate[name](args);
    check(ok, `${name}: arguments ${JSON.stringify(args)} do not match the advertised inputSchema: ${JSON.stringify(validate[name].errors)}`);
  };
  const invalid = (name, args) => {
    check(!validate[name](args), `${name}: the advertised inputSchema accepts bad arguments ${JSON.stringify(args)}`);
  };
  invalid('get_forecast', { town: 'Paris' });
  invalid('get_forecast', { city: 'Paris', unit: 'KELVIN' });
  invalid('list_alerts', {});
  invalid('forecast_chart', { days: 3 });

  // call sends tools/call through the SDK (which validates structuredContent against the
  // outputSchema it cached from tools/list) and counts what happened.
  const call = async (name, args, { progress } = {}) => {
    valid(name, args);
    const options = {};
    const seen = [];
    if (progress) {
      options.onprogress = (p) => {
        seen.push(p);
        summary.progressNotifications++;
      };
    }
    const res = await client.callTool({ name, arguments: args }, undefined, options);
    summary.calls++;
    check(!res.isError, `${name}(${JSON.stringify(args)}) failed: ${JSON.stringify(res.content)}`);
    check(Array.isArray(res.content) && res.content.length > 0, `${name}: no content`);
    if (!EXPECTED_TOOLS[name].rich) {
      check(isObject(res.structuredContent), `${name}: no structuredContent`);
      // The text block mirrors the structured result, for clients that only read text.
      const text = res.content.find((c) => c.type === 'text');
      check(text && deepEqual(JSON.parse(text.text), res.structuredContent), `${name}: the text content does not mirror structuredContent`);
    }
    return { res, progress: seen };
  };

  // get_forecast by city, in Fahrenheit, with progress: one step per day, increasing, with
  // the total.
  {
    const { res, progress } = await call('get_forecast', { city: 'Paris, FR', days: 5, unit: 'TEMPERATURE_UNIT_FAHRENHEIT' }, { progress: true });
    const fc = res.structuredContent;
    checkForecast(fc, 5);
    check(fc.place.name === 'Paris, FR' && fc.place.timeZone === 'Europe/Paris', `get_forecast: place ${JSON.stringify(fc.place)}`);
    check(fc.unit === 'TEMPERATURE_UNIT_FAHRENHEIT', `get_forecast: unit ${fc.unit}`);
    checkAllProgress(progress.length > 0, 'get_forecast: no progress notification arrived');
    for (let i = 0; i < progress.length; i++) {
      check(progress[i].total === 5, `get_forecast: progress total ${progress[i].total}, want 5`);
      check(i === 0 || progress[i].progress > progress[i - 1].progress, 'get_forecast: progress does not increase');
    }
    checkAllProgress(progress.at(-1)?.progress === 5, `get_forecast: last progress ${progress.at(-1)?.progress}, want 5`);
  }

  // A oneof is a rule the descriptions state and the server enforces (the schema does not
  // say it with keywords that model APIs and linters reject): two members are a tool error
  // that names the field.
  {
    const args = { city: 'Paris', coordinates: { latitude: 1, longitude: 2 } };
    valid('get_forecast', args);
    const res = await client.callTool({ name: 'get_forecast', arguments: args });
    summary.calls++;
    const text = res.content?.[0]?.text ?? '';
    check(res.isError === true && text.includes('coordinates'), `get_forecast with two oneof members: ${JSON.stringify(res)}`);
  }

  // get_forecast by coordinates, defaults (3 days, Celsius), no progress requested.
  {
    const { res } = await call('get_forecast', { coordinates: { latitude: -33.8688, longitude: 151.2093 } });
    const fc = res.structuredContent;
    checkForecast(fc, 3);
    check(fc.place.coordinates.latitude === -33.8688 && fc.place.coordinates.longitude === 151.2093, `get_forecast: coordinates ${JSON.stringify(fc.place.coordinates)}`);
    check(fc.unit === 'TEMPERATURE_UNIT_CELSIUS', `get_forecast: default unit ${fc.unit}`);
  }

  // Concurrent calls with progress: each callback gets its own call's notifications.
  {
    const cities = ['Berlin', 'Tokyo', 'New York', 'Lyon', 'Oslo', 'Lima'];
    const results = await Promise.all(cities.map((city, i) => call('get_forecast', { city, days: i + 1 }, { progress: true })));
    results.forEach(({ res, progress }, i) => {
      checkForecast(res.structuredContent, i + 1);
      check(progress.every((p) => p.total === i + 1), `get_forecast(${cities[i]}): progress ${JSON.stringify(progress)} belongs to another call`);
      checkAllProgress(progress.length === i + 1, `get_forecast(${cities[i]}): ${progress.length} progress notifications, want ${i + 1}`);
    });
  }

  // list_alerts: France always has one; most severe first.
  {
    const { res } = await call('list_alerts', { regions: ['FR', 'DE', 'JP', 'US'] });
    const alerts = res.structuredContent.alerts ?? [];
    check(Array.isArray(alerts) && alerts.some((a) => a.region === 'FR'), `list_alerts: no FR alert in ${JSON.stringify(alerts)}`);
    for (const a of alerts) {
      check(typeof a.id === 'string' && a.id && typeof a.headline === 'string' && a.headline, `list_alerts: alert ${JSON.stringify(a)}`);
      check(SEVERITIES.includes(a.severity), `list_alerts: severity ${a.severity}`);
      check(DATE_TIME_RE.test(a.startsAt) && DATE_TIME_RE.test(a.endsAt) && a.startsAt < a.endsAt, `list_alerts: times ${a.startsAt} ${a.endsAt}`);
    }
    for (let i = 1; i < alerts.length; i++) {
      check(SEVERITIES.indexOf(alerts[i - 1].severity) >= SEVERITIES.indexOf(alerts[i].severity), 'list_alerts: not most severe first');
    }
    const { res: severe } = await call('list_alerts', { regions: ['FR', 'DE', 'JP', 'US'], minSeverity: 'SEVERITY_SEVERE' });
    check((severe.structuredContent.alerts ?? []).every((a) => a.severity === 'SEVERITY_SEVERE'), 'list_alerts: minSeverity not applied');
  }

  // forecast_chart: a text summary and a PNG image, no structuredContent; it asks for the
  // forecast internally, whose progress reaches this call.
  {
    const { res, progress } = await call('forecast_chart', { city: 'Tokyo', days: 4 }, { progress: true });
    const text = res.content.find((c) => c.type === 'text');
    const image = res.content.find((c) => c.type === 'image');
    check(text && text.text.includes('Tokyo'), `forecast_chart: text ${JSON.stringify(text)}`);
    check(image && image.mimeType === 'image/png', `forecast_chart: image ${JSON.stringify(image && { ...image, data: '…' })}`);
    const png = Buffer.from(image.data, 'base64');
    check(png.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])), 'forecast_chart: not a PNG');
    check(png.readUInt32BE(16) === 4 * 32 + 8 && png.readUInt32BE(20) === 160, `forecast_chart: PNG is ${png.readUInt32BE(16)}x${png.readUInt32BE(20)}`);
    checkAllProgress(progress.length > 0, 'forecast_chart: no progress notification arrived');
  }

  // export_forecast, a server-streaming rpc: each day arrives as a progress notification with
  // the message in _meta, in order, and the last one is the result.
  {
    const { res, progress } = await call('export_forecast', { city: 'Paris', days: 4 }, { progress: true });
    checkAllProgress(progress.length === 4, `export_forecast: ${progress.length} progress notifications, want 4`);
    for (let i = 0; i < progress.length; i++) {
      const p = progress[i];
      const msg = p._meta?.['protomcp/message'];
      check(isObject(msg) && msg.progress === i + 1 && msg.total === 4 && DATE_RE.test(msg.day?.date), `export_forecast: notification ${i}: ${JSON.stringify(p)}`);
      check(p.progress === i + 1 && p.total === 4 && p.message === `exported ${msg.day.date}` && p._meta['protomcp/seq'] === i + 1, `export_forecast: notification ${i}: ${JSON.stringify(p)}`);
      summary.streamedMessages++;
    }
    check(res.structuredContent.progress === 4 && res._meta?.['protomcp/count'] === 4, `export_forecast: result ${JSON.stringify(res)}`);
    if (progress.length === 4) {
      check(deepEqual(progress[3]._meta['protomcp/message'], res.structuredContent), 'export_forecast: the result is not the last message');
    }
  }

  // get_climate_report, a tool that may run as a task, called plainly: a progress
  // notification per year, then the report.
  {
    const { res, progress } = await call('get_climate_report', { city: 'Berlin', years: 2 }, { progress: true });
    checkAllProgress(progress.length === 2, `get_climate_report: ${progress.length} progress notifications, want 2`);
    const years = res.structuredContent.years ?? [];
    check(years.length === 2 && years[0].year === years[1].year + 1 && typeof res.structuredContent.summary === 'string', `get_climate_report: result ${JSON.stringify(res.structuredContent)}`);
  }

  // The prompt declared with (mcp.v1.prompt): listed with its arguments, rendered with
  // string arguments, and its enum argument completes with no code on the server.
  {
    check(client.getServerCapabilities()?.prompts, 'server did not declare the prompts capability');
    check(client.getServerCapabilities()?.completions, 'server did not declare the completions capability');
    const { prompts } = await client.listPrompts();
    summary.prompts = prompts.map((p) => p.name);
    const plan = prompts.find((p) => p.name === 'plan_trip');
    check(plan && plan.title === 'Plan a trip' && plan.description, `plan_trip: ${JSON.stringify(plan)}`);
    const args = Object.fromEntries((plan.arguments ?? []).map((a) => [a.name, a]));
    check(args.city?.required === true && args.activity?.required === true && !args.days?.required && args.days?.description, `plan_trip arguments: ${JSON.stringify(plan.arguments)}`);
    const got = await client.getPrompt({ name: 'plan_trip', arguments: { city: 'Tokyo', activity: 'ACTIVITY_BEACH', days: '2' } });
    const text = got.messages?.[0]?.content?.text ?? '';
    check(got.messages.length === 1 && got.messages[0].role === 'user' && text.includes('2-day trip to Tokyo, JP'), `plan_trip: ${JSON.stringify(got)}`);
    const done = await client.complete({ ref: { type: 'ref/prompt', name: 'plan_trip' }, argument: { name: 'activity', value: 'S' } });
    check(deepEqual(done.completion.values, ['ACTIVITY_SIGHTSEEING']), `plan_trip activity completions: ${JSON.stringify(done)}`);
    try {
      await client.getPrompt({ name: 'plan_trip', arguments: { city: 'Tokyo', activity: 'ACTIVITY_SKIING' } });
      check(false, 'plan_trip with an unknown activity: want a JSON-RPC error');
    } catch (err) {
      if (err instanceof CheckError) throw err;
      check(err instanceof McpError && err.code === -32602 && err.message.includes('activity'), `plan_trip with an unknown activity: ${err}`);
    }
  }

  // The resource template declared with (mcp.v1.resource): listed, read by URI (the {id}
  // variable decoded into the request), and its variable completed by the handler.
  {
    const { resourceTemplates } = await client.listResourceTemplates();
    summary.resourceTemplates = resourceTemplates.map((t) => t.uriTemplate);
    const station = resourceTemplates.find((t) => t.uriTemplate === 'weather://stations/{id}');
    check(station && station.name === 'station' && station.mimeType === 'application/json' && station.description, `station template: ${JSON.stringify(station)}`);
    const read = await client.readResource({ uri: 'weather://stations/paris-montsouris' });
    const c = read.contents?.[0];
    check(c?.uri === 'weather://stations/paris-montsouris' && c.mimeType === 'application/json', `station read: ${JSON.stringify(read)}`);
    const body = JSON.parse(c.text);
    check(body.id === 'paris-montsouris' && body.place?.name === 'Paris, FR' && typeof body.temperature === 'number', `station read: ${c.text}`);
    const done = await client.complete({ ref: { type: 'ref/resource', uri: 'weather://stations/{id}' }, argument: { name: 'id', value: 'to' } });
    check(deepEqual(done.completion.values, ['tokyo-otemachi']), `station id completions: ${JSON.stringify(done)}`);
  }

  // A tool execution error (the handler refuses) is a result with isError, readable by the
  // model; so are arguments the server cannot decode (an unknown field).
  for (const [name, args, want] of [
    ['get_forecast', { city: 'Paris', days: 40 }, 'days'],
    ['get_forecast', { town: 'Paris' }, 'town'],
    ['list_alerts', { regions: ['FRA'] }, 'FRA'],
  ]) {
    const res = await client.callTool({ name, arguments: args });
    summary.calls++;
    check(res.isError === true, `${name}(${JSON.stringify(args)}): want isError, got ${JSON.stringify(res)}`);
    const text = res.content.find((c) => c.type === 'text')?.text ?? '';
    check(text.includes(want), `${name}(${JSON.stringify(args)}): error text ${JSON.stringify(text)} does not mention ${want}`);
    summary.toolErrors++;
  }

  // An unknown tool is a protocol error (JSON-RPC error), which the SDK throws.
  try {
    await client.callTool({ name: 'no_such_tool', arguments: {} });
    check(false, 'no_such_tool: want a JSON-RPC error, got a result');
  } catch (err) {
    if (err instanceof CheckError) throw err;
    check(err instanceof McpError && err.code === -32602, `no_such_tool: want McpError -32602, got ${err}`);
    summary.protocolErrors++;
  }

  // End the session (DELETE), then close; over stdio, close ends the process.
  if (!stdio) await transport.terminateSession();
  await client.close();
  summary.ok = true;
}

function checkForecast(fc, days) {
  check(isObject(fc) && isObject(fc.place) && typeof fc.place.name === 'string', `forecast: place ${JSON.stringify(fc?.place)}`);
  check(Array.isArray(fc.days) && fc.days.length === days, `forecast: want ${days} days, got ${fc.days?.length}`);
  check(DATE_TIME_RE.test(fc.issuedAt), `forecast: issuedAt ${fc.issuedAt}`);
  for (const d of fc.days) {
    check(DATE_RE.test(d.date), `forecast: date ${d.date}`);
    check(CONDITIONS.includes(d.condition), `forecast: condition ${d.condition}`);
    // proto3 JSON leaves out fields at their zero value: a missing number is 0.
    const high = d.high ?? 0;
    const low = d.low ?? 0;
    check(typeof high === 'number' && typeof low === 'number' && high > low, `forecast: high ${d.high} low ${d.low}`);
    const parts = Object.keys(d.precipitationChance ?? {}).sort().join(',');
    check(parts === 'afternoon,evening,morning,night', `forecast: precipitationChance parts ${parts}`);
  }
  for (let i = 1; i < fc.days.length; i++) {
    check(fc.days[i - 1].date < fc.days[i].date, 'forecast: days not in order');
  }
}

const watchdog = setTimeout(() => {
  summary.error = `not done after ${DEADLINE_MS} ms`;
  console.log(JSON.stringify(summary));
  process.exit(2);
}, DEADLINE_MS);
watchdog.unref();

try {
  await main();
} catch (err) {
  summary.ok = false;
  summary.error = err instanceof CheckError ? err.message : String(err?.stack ?? err);
}
clearTimeout(watchdog);
console.log(JSON.stringify(summary));
if (!summary.ok) console.error(`client.mjs: ${summary.error}`);
process.exit(summary.ok ? 0 : 1);
