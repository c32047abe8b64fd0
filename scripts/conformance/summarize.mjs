// Usage: node summarize.mjs <results-dir>
// Reads the checks.json that the conformance CLI wrote somewhere under <results-dir> and
// prints one tab-separated line: successes, failures, warnings, and a note (the first FAILURE
// message, else the first WARNING message; "no checks.json" when there is none).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

function find(dir) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) {
      const hit = find(p);
      if (hit) return hit;
    } else if (name === 'checks.json') {
      return p;
    }
  }
  return null;
}

const file = find(process.argv[2]);
if (!file) {
  console.log('0\t0\t0\tno checks.json');
  process.exit(0);
}
let checks;
try {
  checks = JSON.parse(readFileSync(file, 'utf8'));
} catch (e) {
  console.log(`0\t0\t0\tunreadable checks.json: ${e.message}`);
  process.exit(0);
}
const count = (status) => checks.filter((c) => c.status === status).length;
const bad = checks.find((c) => c.status === 'FAILURE') ?? checks.find((c) => c.status === 'WARNING');
const note = bad ? `${bad.status === 'WARNING' ? 'warning ' : ''}${bad.id}: ${bad.errorMessage ?? bad.description ?? ''}` : '';
console.log([count('SUCCESS'), count('FAILURE'), count('WARNING'), note.replace(/\s+/g, ' ').trim().slice(0, 140)].join('\t'));
