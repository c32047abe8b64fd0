// client.mjs URL: calls the read-only tools of the library example's MCP server at URL with
// the official TypeScript SDK (Client over StreamableHTTPClientTransport), and a failing one,
// and prints what came back as one JSON line: library_test.go compares it with what a grpc-go
// client gets. The SDK checks each structuredContent against the tool's outputSchema.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const client = new Client({ name: 'library-test', version: '1.0.0' });
await client.connect(new StreamableHTTPClientTransport(new URL(process.argv[2])));
const out = {};
out.list = (await client.callTool({ name: 'list_books', arguments: {} })).structuredContent;
out.listAuthor = (await client.callTool({ name: 'list_books', arguments: { author: 'Octavia E. Butler' } })).structuredContent;
out.get = (await client.callTool({ name: 'get_book', arguments: { id: 3 } })).structuredContent;
const progress = [];
const res = await client.callTool({ name: 'export_books', arguments: {} }, undefined, {
  onprogress: (p) => progress.push(p._meta?.['protomcp/message']),
});
out.export = progress;
out.exportResult = res.structuredContent;
const missing = await client.callTool({ name: 'get_book', arguments: { id: 99 } });
out.notFound = { isError: missing.isError ?? false, text: missing.content?.[0]?.text ?? '', status: missing._meta?.['protomcp/grpc-status'] ?? null };
console.log(JSON.stringify(out));
await client.close();
