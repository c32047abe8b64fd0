// Validates tool schemas and JSON samples with Ajv in strict mode, as draft-07 (Ajv's default
// dialect, the one most MCP clients' validators speak) with ajv-formats: every schema must
// compile (no unknown keyword, format or type mix), and every sample must be valid against its
// tool's input or output schema.
//
// stdin: {"tools": [{"name", "inputSchema", "outputSchema"?}], "samples": [{"tool", "schema": "input"|"output", "value"}]}
// stdout: {"ok": bool, "compiled": n, "validated": n, "errors": [string]}
import Ajv from 'ajv';
import addFormats from 'ajv-formats';

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const input = JSON.parse(Buffer.concat(chunks).toString('utf8'));

const errors = [];
const validators = {};
let compiled = 0;
let validated = 0;
for (const tool of input.tools) {
  for (const kind of ['input', 'output']) {
    const schema = tool[`${kind}Schema`];
    if (schema === undefined) continue;
    // One Ajv instance a schema: $defs names repeat across tools.
    const ajv = new Ajv({ strict: true, allErrors: true });
    addFormats(ajv);
    try {
      validators[`${tool.name}/${kind}`] = ajv.compile(schema);
      compiled++;
    } catch (e) {
      errors.push(`${tool.name}: ${kind} schema does not compile under strict Ajv (draft-07): ${e.message}`);
    }
  }
}
for (const s of input.samples) {
  const validate = validators[`${s.tool}/${s.schema}`];
  if (!validate) {
    errors.push(`${s.tool}: no compiled ${s.schema} schema for a sample`);
    continue;
  }
  validated++;
  if (!validate(s.value)) {
    errors.push(`${s.tool}: ${s.schema} ${JSON.stringify(s.value)} is invalid: ${JSON.stringify(validate.errors)}`);
  }
}
process.stdout.write(JSON.stringify({ ok: errors.length === 0, compiled, validated, errors }) + '\n');
process.exit(errors.length === 0 ? 0 : 1);
