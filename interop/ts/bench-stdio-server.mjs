// bench-stdio-server.mjs: the benchmark's echo tool (bench/internal/tools) served with the
// official TypeScript SDK over stdio (McpServer on StdioServerTransport), for the stdio rows
// of protomcp's `make bench`. A client launches it: node bench-stdio-server.mjs
import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';

const server = new McpServer({ name: 'ts-bench', version: '1' });
server.registerTool(
  'echo',
  {
    description: 'Returns its text unchanged.',
    inputSchema: { text: z.string() },
    outputSchema: { text: z.string() },
  },
  async ({ text }) => {
    const out = { text };
    return { content: [{ type: 'text', text: JSON.stringify(out) }], structuredContent: out };
  },
);
await server.connect(new StdioServerTransport());
