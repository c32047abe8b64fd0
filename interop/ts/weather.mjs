// The weather example's service (examples/weather/weather.go) written again in JavaScript, so
// that the TypeScript SDK server in server.mjs answers with the same data as the Go handler:
// the same inputs and the same clock give the same forecasts, alerts and chart pixels. Results
// are plain objects in the proto3 JSON shape of weather.v1 messages.
import { deflateSync } from 'node:zlib';

export const CONDITIONS = ['CONDITION_UNSPECIFIED', 'CONDITION_SUNNY', 'CONDITION_CLOUDY', 'CONDITION_RAIN', 'CONDITION_SNOW', 'CONDITION_STORM'];
export const SEVERITIES = ['SEVERITY_UNSPECIFIED', 'SEVERITY_MINOR', 'SEVERITY_MODERATE', 'SEVERITY_SEVERE'];
export const UNITS = ['TEMPERATURE_UNIT_UNSPECIFIED', 'TEMPERATURE_UNIT_CELSIUS', 'TEMPERATURE_UNIT_FAHRENHEIT'];

const MAX_DAYS = 14;
const DEFAULT_DAYS = 3;
const DEFAULT_CHART_DAYS = 7;
const HOUR = 3600_000;
const DAY = 24 * HOUR;

const PLACES = {
  paris: { name: 'Paris, FR', coordinates: { latitude: 48.8566, longitude: 2.3522 }, timeZone: 'Europe/Paris' },
  berlin: { name: 'Berlin, DE', coordinates: { latitude: 52.52, longitude: 13.405 }, timeZone: 'Europe/Berlin' },
  tokyo: { name: 'Tokyo, JP', coordinates: { latitude: 35.6762, longitude: 139.6503 }, timeZone: 'Asia/Tokyo' },
  'new york': { name: 'New York, US', coordinates: { latitude: 40.7128, longitude: -74.006 }, timeZone: 'America/New_York' },
};

const BASE_CHANCE = { CONDITION_SUNNY: 0, CONDITION_CLOUDY: 20, CONDITION_RAIN: 60, CONDITION_SNOW: 50, CONDITION_STORM: 70 };
const HAZARDS = ['Strong winds', 'Heavy rain', 'Heat wave', 'Thunderstorms'];

// hash is 32-bit FNV-1a over the UTF-8 bytes of s, as hash/fnv's New32a.
export function hash(s) {
  let h = 0x811c9dc5;
  for (const b of Buffer.from(s, 'utf8')) {
    h ^= b;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

const div = (a, b) => Math.floor(a / b); // unsigned integer division
const dateOnly = (ms) => new Date(ms).toISOString().slice(0, 10);
// timestamp formats like protojson does for whole seconds: no fractional part.
const timestamp = (ms) => new Date(ms).toISOString().replace('.000Z', 'Z');

export class WeatherError extends Error {}

export class Weather {
  // now returns the current time in milliseconds.
  constructor(now = () => Date.now()) {
    this.now = now;
  }

  // getForecast implements get_forecast. progress(done, total, message) is called once per day.
  async getForecast(req, progress = async () => {}) {
    const place = resolve(req);
    const days = req.days ?? DEFAULT_DAYS;
    if (days < 1 || days > MAX_DAYS) {
      throw new WeatherError(`days must be between 1 and ${MAX_DAYS}, got ${days}`);
    }
    let unit = req.unit ?? 'TEMPERATURE_UNIT_UNSPECIFIED';
    if (unit === 'TEMPERATURE_UNIT_UNSPECIFIED') unit = 'TEMPERATURE_UNIT_CELSIUS';
    const now = this.now();
    const fc = forecast(place.name, now, days, unit);
    for (let i = 0; i < fc.length; i++) {
      await progress(i + 1, fc.length, `forecast for ${fc[i].date}`);
    }
    return { place, days: fc, issuedAt: timestamp(now - (now % HOUR)), unit };
  }

  // listAlerts implements list_alerts.
  async listAlerts(req) {
    const now = this.now();
    const day = now - (now % DAY);
    const date = dateOnly(day);
    const minSeverity = SEVERITIES.indexOf(req.minSeverity ?? 'SEVERITY_UNSPECIFIED');
    const alerts = [];
    for (let region of req.regions ?? []) {
      region = region.trim().toUpperCase();
      if (Buffer.byteLength(region, 'utf8') !== 2) {
        throw new WeatherError(`region ${JSON.stringify(region)} is not a two-letter country code`);
      }
      const h = hash(`${region}/${date}`);
      if (h % 3 !== 0 && region !== 'FR') continue; // France always has one, for the demo
      const severity = 1 + (div(h, 3) % 3);
      if (severity < minSeverity) continue;
      alerts.push({
        id: `${region}-${date.replaceAll('-', '')}-${h % 1000}`,
        region,
        severity: SEVERITIES[severity],
        headline: `${HAZARDS[div(h, 9) % 4]} in ${region}`,
        startsAt: timestamp(day + 6 * HOUR),
        endsAt: timestamp(day + 30 * HOUR),
      });
    }
    alerts.sort((a, b) => SEVERITIES.indexOf(b.severity) - SEVERITIES.indexOf(a.severity)); // stable
    return { alerts };
  }

  // renderForecastChart implements forecast_chart: a text summary and a PNG bar chart.
  async renderForecastChart(req, progress) {
    const fc = await this.getForecast({ city: req.city ?? '', days: req.days ?? DEFAULT_CHART_DAYS }, progress);
    const png = chart(fc.days);
    const first = fc.days[0];
    const last = fc.days.at(-1);
    return [
      { type: 'text', text: `Temperatures in ${fc.place.name} from ${first.date} to ${last.date} (°C): highs in red, lows in blue.` },
      { type: 'image', data: png.toString('base64'), mimeType: 'image/png' },
    ];
  }
}

function resolve(req) {
  if (req.city !== undefined) {
    const name = req.city.trim();
    if (name === '') throw new WeatherError('city is empty');
    let key = name.toLowerCase();
    const comma = key.indexOf(',');
    if (comma >= 0) key = key.slice(0, comma).trim();
    if (PLACES[key]) return structuredClone(PLACES[key]);
    const h = hash(key);
    return {
      name,
      coordinates: { latitude: (h % 18000) / 100 - 90, longitude: (div(h, 18000) % 36000) / 100 - 180 },
      timeZone: 'UTC',
    };
  }
  if (req.coordinates !== undefined) {
    const lat = Number(req.coordinates.latitude ?? 0);
    const lon = Number(req.coordinates.longitude ?? 0);
    if (!(Math.abs(lat) <= 90 && Math.abs(lon) <= 180)) {
      throw new WeatherError(`coordinates ${lat}, ${lon} are not on Earth`);
    }
    return { name: `${lat.toFixed(4)}, ${lon.toFixed(4)}`, coordinates: { latitude: lat, longitude: lon }, timeZone: 'UTC' };
  }
  throw new WeatherError('give a city or coordinates');
}

function forecast(place, start, days, unit) {
  const out = [];
  for (let i = 0; i < days; i++) {
    const date = dateOnly(start + i * DAY);
    const h = hash(`${place}/${date}`);
    let low = (h % 20) - 2; // -2..17 °C
    let high = low + 3 + (div(h, 20) % 10);
    if (unit === 'TEMPERATURE_UNIT_FAHRENHEIT') {
      [low, high] = [(low * 9) / 5 + 32, (high * 9) / 5 + 32];
    }
    const condition = CONDITIONS[1 + (div(h, 200) % 5)];
    const chance = (part) => BASE_CHANCE[condition] + ((h >>> part) % 30);
    out.push({
      date,
      condition,
      high,
      low,
      precipitationChance: { morning: chance(3), afternoon: chance(7), evening: chance(11), night: chance(13) },
    });
  }
  return out;
}

// chart draws the daily highs (red) and lows (blue) as bars around a grey 0 °C line.
function chart(days) {
  const barW = 12, gap = 8, height = 160, scale = 4;
  const width = days.length * (2 * barW + gap) + gap;
  const px = Buffer.alloc(width * height * 3, 255); // RGB, white
  const fill = (x0, y0, x1, y1, [r, g, b]) => {
    for (let y = Math.max(y0, 0); y < Math.min(y1, height); y++) {
      for (let x = x0; x < x1; x++) {
        const o = (y * width + x) * 3;
        px[o] = r;
        px[o + 1] = g;
        px[o + 2] = b;
      }
    }
  };
  const zero = height - 40;
  fill(0, zero, width, zero + 1, [160, 160, 160]);
  const bar = (x, v, c) => {
    const y = zero - Math.trunc(v * scale);
    if (y < zero) fill(x, y, x + barW, zero, c);
    else fill(x, zero, x + barW, y, c);
  };
  days.forEach((d, i) => {
    const x = gap + i * (2 * barW + gap);
    bar(x, d.high ?? 0, [220, 60, 40]);
    bar(x + barW, d.low ?? 0, [40, 90, 220]);
  });
  return encodePNG(width, height, px);
}

// encodePNG writes 8-bit RGB pixels as a PNG: signature, IHDR, one IDAT (rows with filter
// type 0, zlib-compressed), IEND.
function encodePNG(width, height, rgb) {
  const rows = Buffer.alloc(height * (1 + width * 3));
  for (let y = 0; y < height; y++) {
    rows[y * (1 + width * 3)] = 0;
    rgb.copy(rows, y * (1 + width * 3) + 1, y * width * 3, (y + 1) * width * 3);
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // colour type: truecolour
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', ihdr),
    pngChunk('IDAT', deflateSync(rows)),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

function pngChunk(type, data) {
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const out = Buffer.alloc(body.length + 8);
  out.writeUInt32BE(data.length, 0);
  body.copy(out, 4);
  out.writeUInt32BE(crc32(body), body.length + 4);
  return out;
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(buf) {
  let c = 0xffffffff;
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
