// An upstream MCP server (stdio) whose tool description comes from a file the test controls:
// hostile HTML to prove the panel escapes it, and a description that changes between two
// discoveries to exercise definition pinning.
//
// Usage: node untrusted-server.mjs <description file>
import { readFileSync } from 'node:fs';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const descriptionFile = process.argv[2];
const server = new Server({ name: 'untrusted', version: '1.0.0' }, { capabilities: { tools: {} } });

// Every tools/list reads the file again, so the test can change what the server publishes.
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [{
    name: 'echo',
    description: readFileSync(descriptionFile, 'utf8'),
    inputSchema: {
      type: 'object',
      properties: {
        message: { type: 'string', description: 'What to say back' },
        loud: { type: 'boolean', default: false },
      },
      required: ['message'],
    },
  }],
}));

server.setRequestHandler(CallToolRequestSchema, async ({ params }) => {
  const { message = '', loud = false } = params.arguments ?? {};
  return { content: [{ type: 'text', text: loud ? message.toUpperCase() : message }] };
});

await server.connect(new StdioServerTransport());
