// server.mjs PORT [--now RFC3339] [--json] [--close-streams] [--exit-with-stdin]: serves the weather example's
// tools (examples/weather) with the official TypeScript SDK: an McpServer per session over
// StreamableHTTPServerTransport (stateful sessions, resumable SSE), at
// http://127.0.0.1:PORT/mcp. PORT 0 picks a free port. When ready it prints "listening <port>".
//
//	--now RFC3339       fix the clock (the Go tests compare results with the Go handler's)
//	--json              answer POSTs with JSON instead of SSE streams
//	--close-streams     close each call's SSE stream when the call starts and again after its
//	                    second progress notification (SEP-1699 polling): clients must resume
//	                    with GET and Last-Event-ID to get the rest
//	--exit-with-stdin   exit when stdin closes, so that a dead parent leaves no server behind
import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { CONDITIONS, SEVERITIES, UNITS, Weather } from './weather.mjs';

const { values: flags, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    now: { type: 'string' },
    json: { type: 'boolean', default: false },
    'close-streams': { type: 'boolean', default: false },
    'exit-with-stdin': { type: 'boolean', default: false },
  },
});
const port = Number(positionals[0] ?? 0);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error('usage: node server.mjs PORT [--now RFC3339] [--json] [--exit-with-stdin]');
  process.exit(2);
}
let now = () => Date.now();
if (flags.now !== undefined) {
  const fixed = Date.parse(flags.now);
  if (Number.isNaN(fixed)) {
    console.error(`server.mjs: --now ${flags.now} is not a date`);
    process.exit(2);
  }
  now = () => fixed;
}
const weather = new Weather(now);
const MAX_BODY = 4 << 20;

// Schemas: the proto3 JSON shapes of the weather.v1 messages, as the generated Go code
// advertises them (gen/weather/v1/weatherv1mcp/weather.mcp.go).
const int32 = z.number().int().min(-2147483648).max(2147483647);
// A double: a JSON number, or one of the strings protojson uses for non-finite values.
const double = z.union([z.number(), z.enum(['NaN', 'Infinity', '-Infinity'])]);
const coordinatesIn = z
  .object({
    latitude: double.optional().describe('Latitude, from -90 (south) to 90 (north).'),
    longitude: double.optional().describe('Longitude, from -180 (west) to 180 (east).'),
  })
  .strict();
const coordinatesOut = z
  .object({
    latitude: z.number().optional().describe('Latitude, from -90 (south) to 90 (north).'),
    longitude: z.number().optional().describe('Longitude, from -180 (west) to 180 (east).'),
  })
  .strict();
const dateTime = z.string().datetime();

const getForecastIn = z
  .object({
    city: z.string().optional().describe('A city name, optionally with its country, e.g. "Paris, FR". Set at most one of: city, coordinates.'),
    coordinates: coordinatesIn.optional().describe('A point on Earth. Set at most one of: city, coordinates.'),
    days: int32.optional().describe('How many days to forecast, 1 to 14. Defaults to 3.'),
    unit: z.enum(UNITS.slice(1)).optional().describe('The unit of temperatures. Defaults to CELSIUS.'),
  })
  .strict()
  .describe('The arguments of GetForecast.');
const getForecastOut = z
  .object({
    place: z
      .object({
        name: z.string().describe("The place's display name."),
        coordinates: coordinatesOut.describe('Where the place is.'),
        timeZone: z.string().describe("The place's IANA time zone, e.g. Europe/Paris."),
      })
      .strict()
      .describe('The place forecast, as resolved from the request.'),
    days: z
      .array(
        z
          .object({
            date: z.string().regex(/^\d{4}-\d{2}-\d{2}$/).describe("The day, as YYYY-MM-DD in the place's time zone."),
            condition: z.enum(CONDITIONS).describe('The general condition of the day.'),
            high: z.number().describe('The highest temperature of the day.'),
            low: z.number().describe('The lowest temperature of the day.'),
            precipitationChance: z.record(z.string(), int32).describe('The chance of precipitation in percent, by part of the day.'),
          })
          .strict()
          .describe('The weather of one day.'),
      )
      .describe('One entry per day, starting today.'),
    issuedAt: dateTime.describe('When the forecast was issued.'),
    unit: z.enum(UNITS).describe('The unit of every temperature in this forecast.'),
  })
  .strict()
  .describe('The forecast of GetForecast.');

const listAlertsIn = z
  .object({
    regions: z.array(z.string()).describe('The regions to look at, as two-letter country codes, e.g. "FR".'),
    minSeverity: z.enum(SEVERITIES.slice(1)).optional().describe('Leave out alerts less severe than this. Defaults to all alerts.'),
  })
  .strict()
  .describe('The arguments of ListAlerts.');
const listAlertsOut = z
  .object({
    alerts: z
      .array(
        z
          .object({
            id: z.string().describe("The alert's identifier."),
            region: z.string().describe('The region it applies to.'),
            severity: z.enum(SEVERITIES).describe('How severe the danger is.'),
            headline: z.string().describe('A one-line summary.'),
            startsAt: dateTime.describe('When the alert comes into force.'),
            endsAt: dateTime.describe('When the alert ends.'),
          })
          .strict()
          .describe('A weather alert.'),
      )
      .describe('The alerts, most severe first. Empty when the weather is calm.'),
  })
  .strict()
  .describe('The alerts of ListAlerts.');

const forecastChartIn = z
  .object({
    city: z.string().describe('The city to chart.'),
    days: int32.optional().describe('How many days to chart, 1 to 14. Defaults to 7.'),
  })
  .strict()
  .describe('The arguments of RenderForecastChart.');

// structured returns a tool result carrying v as structuredContent and as its text mirror.
const structured = (v) => ({ content: [{ type: 'text', text: JSON.stringify(v) }], structuredContent: v });

// progressOf returns a function that sends notifications/progress for the request of extra,
// or does nothing when the client did not ask for progress.
function progressOf(extra) {
  const token = extra._meta?.progressToken;
  if (token === undefined) return async () => {};
  let sent = 0;
  return async (progress, total, message) => {
    await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress, total, message } });
    if (++sent === 2) closeStream(extra);
  };
}

// closeStream closes the connection carrying the call's SSE stream, with --close-streams.
function closeStream(extra) {
  if (flags['close-streams']) extra.closeSSEStream?.();
}

function newMcpServer() {
  const server = new McpServer({ name: 'weather-ts', title: 'Weather example (TypeScript SDK)', version: '1.0.0' });
  server.registerTool(
    'get_forecast',
    {
      title: 'Weather forecast',
      description: 'Returns the daily forecast for a place, for today and the following days.',
      inputSchema: getForecastIn,
      outputSchema: getForecastOut,
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: true },
    },
    async (args, extra) => {
      closeStream(extra);
      if (args.city !== undefined && args.coordinates !== undefined) {
        throw new Error('set at most one of: city, coordinates');
      }
      return structured(await weather.getForecast(args, progressOf(extra)));
    },
  );
  server.registerTool(
    'list_alerts',
    {
      title: 'Weather alerts',
      description: 'Lists the weather alerts in force in some regions, most severe first.',
      inputSchema: listAlertsIn,
      outputSchema: listAlertsOut,
      annotations: { readOnlyHint: true, idempotentHint: true },
    },
    async (args, extra) => {
      closeStream(extra);
      return structured(await weather.listAlerts(args));
    },
  );
  server.registerTool(
    'forecast_chart',
    {
      title: 'Forecast chart',
      description: "Draws the forecast's temperatures as a PNG chart, returned as an image with a short text summary.",
      inputSchema: forecastChartIn,
      annotations: { readOnlyHint: true, idempotentHint: true },
    },
    async (args, extra) => {
      closeStream(extra);
      return { content: await weather.renderForecastChart(args, progressOf(extra)) };
    },
  );
  return server;
}

// An in-memory event store, so that SSE streams carry event IDs and can be resumed with GET
// and Last-Event-ID.
class MemoryEventStore {
  #events = new Map(); // event ID -> { streamId, message }
  #seq = 0;

  async storeEvent(streamId, message) {
    const id = `${streamId}_${String(++this.#seq).padStart(10, '0')}`;
    this.#events.set(id, { streamId, message });
    return id;
  }

  async getStreamIdForEventId(eventId) {
    return this.#events.get(eventId)?.streamId;
  }

  async replayEventsAfter(lastEventId, { send }) {
    const last = this.#events.get(lastEventId);
    if (!last) return '';
    let after = false;
    for (const [id, ev] of this.#events) {
      if (id === lastEventId) {
        after = true;
        continue;
      }
      // Priming events are stored as {} and carry no message to replay.
      if (after && ev.streamId === last.streamId && Object.keys(ev.message).length > 0) await send(id, ev.message);
    }
    return last.streamId;
  }
}

const transports = new Map(); // session ID -> transport

function sendError(res, status, code, message) {
  if (res.headersSent) return res.end();
  res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code, message } }));
}

// loopback reports whether a Host or Origin names this machine: DNS-rebinding protection.
function loopbackHost(host) {
  return /^(127\.0\.0\.1|localhost|\[::1\])(:\d+)?$/i.test(host ?? '');
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on('data', (c) => {
      size += c.length;
      if (size > MAX_BODY) {
        reject(Object.assign(new Error('request body too large'), { status: 413 }));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

async function handle(req, res) {
  const path = new URL(req.url, 'http://localhost').pathname;
  if (path !== '/mcp') return sendError(res, 404, -32601, `no MCP endpoint at ${path}; use /mcp`);
  if (!loopbackHost(req.headers.host)) return sendError(res, 403, -32000, `Host ${req.headers.host} is not allowed`);
  const origin = req.headers.origin;
  if (origin !== undefined && !loopbackHost(origin.replace(/^https?:\/\//, ''))) {
    return sendError(res, 403, -32000, `Origin ${origin} is not allowed`);
  }

  let body;
  if (req.method === 'POST') {
    try {
      body = JSON.parse(await readBody(req));
    } catch (err) {
      return sendError(res, err.status ?? 400, -32700, `Parse error: ${err.message}`);
    }
  }
  const sid = req.headers['mcp-session-id'];
  if (sid !== undefined) {
    const transport = transports.get(sid);
    if (!transport) return sendError(res, 404, -32001, 'Session not found');
    return transport.handleRequest(req, res, body);
  }
  const initializing = req.method === 'POST' && (Array.isArray(body) ? body.some(isInitializeRequest) : isInitializeRequest(body));
  if (!initializing) return sendError(res, 400, -32000, 'Bad Request: Mcp-Session-Id header is required');

  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    enableJsonResponse: flags.json,
    eventStore: new MemoryEventStore(),
    retryInterval: 100,
    onsessioninitialized: (id) => transports.set(id, transport),
    onsessionclosed: (id) => transports.delete(id),
  });
  transport.onclose = () => {
    if (transport.sessionId) transports.delete(transport.sessionId);
  };
  await newMcpServer().connect(transport);
  await transport.handleRequest(req, res, body);
}

const httpServer = createServer((req, res) => {
  handle(req, res).catch((err) => {
    console.error(`server.mjs: ${req.method} ${req.url}: ${err?.stack ?? err}`);
    sendError(res, 500, -32603, 'Internal error');
  });
});

let stopping = false;
async function shutdown(why) {
  if (stopping) return;
  stopping = true;
  console.error(`server.mjs: shutting down (${why})`);
  setTimeout(() => process.exit(0), 2000).unref();
  for (const t of transports.values()) await t.close().catch(() => {});
  httpServer.closeAllConnections();
  httpServer.close(() => process.exit(0));
}
process.on('SIGTERM', () => shutdown('SIGTERM'));
process.on('SIGINT', () => shutdown('SIGINT'));
if (flags['exit-with-stdin']) {
  process.stdin.on('end', () => shutdown('stdin closed'));
  process.stdin.on('error', () => shutdown('stdin error'));
  process.stdin.resume();
}

httpServer.listen(port, '127.0.0.1', () => {
  console.log(`listening ${httpServer.address().port}`);
});
