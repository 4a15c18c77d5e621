// The reference server of the conformance suite's requirements written with the official
// TypeScript SDK v2 (`@modelcontextprotocol/server` 2.4, `@modelcontextprotocol/node`), the twin
// of `tests/python/conformance_server_2026.py` and of `tests/python/conformance_server.py`: the
// tools, prompts, resources and completion of both, to the scenarios' descriptions, serving both
// eras from one endpoint.
//
// - Revision 2026-07-28 (a per-request `_meta` envelope): `createMcpHandler` with a fresh server
//   per request — `server/discover`, `subscriptions/listen` (list changes, resource updates),
//   `input_required` results (`inputRequired(...)`, the request state sealed by
//   `createRequestStateCodec`), caching hints on every list and read, logs only at the level a
//   request's envelope asks for.
// - The handshake era (2025-11-25 and older, `initialize`): sessions, each with its own server
//   over a sessionful streamable HTTP transport, routed with `isLegacyRequest`, kept until it
//   closes (a DELETE included); what only that era has besides: `logging/setLevel`,
//   `resources/subscribe` and `resources/unsubscribe` (updates by
//   `notifications/resources/updated`).
// - The tools of the handshake-era scenarios (`test_sampling`, `test_elicitation`,
//   `test_elicitation_sep1034_defaults`, `test_elicitation_sep1330_enums`,
//   `test_tool_with_logging`, `test_touch_subscribed_resources`) are served on both, written once:
//   the sampling and elicitation ones return `inputRequired(...)` and answer from the input
//   responses. On 2026-07-28 the client retries with them; on a session the SDK asks the client
//   with requests on the call's stream (sampling/createMessage, elicitation/create, its built-in
//   compatibility layer, which refuses what the client did not declare it can answer) and calls
//   the tool again with the answers.
//
// Usage: node reference-server-2026.mjs <port>   (streamable HTTP at http://127.0.0.1:<port>/mcp;
// it prints "listening on http://127.0.0.1:<port>/mcp" once it accepts connections)

import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';

import { toNodeHandler } from '@modelcontextprotocol/node';
import {
    CLIENT_CAPABILITIES_META_KEY,
    McpServer,
    ResourceTemplate,
    WebStandardStreamableHTTPServerTransport,
    acceptedContent,
    completable,
    createMcpHandler,
    createRequestStateCodec,
    fromJsonSchema,
    hostHeaderValidationResponse,
    inputRequired,
    inputResponse,
    isLegacyRequest,
    localhostAllowedHostnames,
    localhostAllowedOrigins,
    originValidationResponse
} from '@modelcontextprotocol/server';
import * as z from 'zod';

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
const WAV = Buffer.from(
    'RIFF$\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00D\xac\x00\x00\x88X\x01\x00\x02\x00\x10\x00data\x00\x00\x00\x00',
    'latin1'
).toString('base64');

const hint = { ttlMs: 60_000, cacheScope: 'public' };
const CACHE_HINTS = Object.fromEntries(
    ['tools/list', 'prompts/list', 'resources/list', 'resources/templates/list', 'resources/read'].map(m => [m, hint])
);

// Every round of a flow may reach another per-request instance: one key for the process.
const sealed = createRequestStateCodec({ key: randomBytes(32) });
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

// The schema the suite's `json-schema-2020-12` scenario expects listed as it is (SEP-1613, SEP-2106).
const SCHEMA_2020_12 = {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'object',
    $defs: {
        address: {
            $anchor: 'addressDef',
            type: 'object',
            properties: { street: { type: 'string' }, city: { type: 'string' } }
        }
    },
    properties: {
        name: { type: 'string' },
        address: { $ref: '#/$defs/address' },
        contactMethod: { type: 'string', enum: ['phone', 'email'] },
        phone: { type: 'string' },
        email: { type: 'string' }
    },
    allOf: [{ anyOf: [{ required: ['phone'] }, { required: ['email'] }] }],
    if: { properties: { contactMethod: { const: 'phone' } }, required: ['contactMethod'] },
    then: { required: ['phone'] },
    else: { required: ['email'] },
    additionalProperties: false
};

const text = value => ({ content: [{ type: 'text', text: value }] });
const user = content => ({ role: 'user', content: typeof content === 'string' ? { type: 'text', text: content } : content });
const embedded = (uri, value = 'This is an embedded resource.') => ({
    type: 'resource',
    resource: { uri, mimeType: 'text/plain', text: value }
});
const ask = (message, field, type = 'string') =>
    inputRequired.elicit({
        message,
        requestedSchema: { type: 'object', properties: { [field]: { type } }, required: [field] }
    });
const sample = (prompt, maxTokens) =>
    inputRequired.createMessage({ messages: [{ role: 'user', content: { type: 'text', text: prompt } }], maxTokens });

/** The capabilities the client declared: the request's envelope (2026-07-28), else the session's. */
function clientCapabilities(ctx, server) {
    return ctx.mcpReq.envelope?.[CLIENT_CAPABILITIES_META_KEY] ?? server.server.getClientCapabilities();
}

/**
 * Suggests the values that start with what is typed: the completions of the template's `id` and of
 * `test_prompt_with_arguments`' `arg1` and `arg2`.
 */
const suggest = value => ['testValue1', 'testValue2', 'paris', 'park'].filter(v => v.startsWith(value ?? ''));

// Tools and prompts the list-change triggers added, served by every instance from then on.
const added = { tools: [], prompts: [] };
let changes = 0;
/**
 * The open handshake-era sessions: id → its server, its transport and the URIs it subscribed to
 * (`resources/subscribe`). Each is removed when its transport closes.
 */
const sessions = new Map();

function addTool(server, name) {
    server.registerTool(name, { description: 'A tool added by test_trigger_tool_change.' }, () => text('added'));
}
function addPrompt(server, name) {
    server.registerPrompt(name, { description: 'A prompt added by test_trigger_prompt_change.' }, () => ({
        messages: [user('added')]
    }));
}

/** The resources whose updates a client may ask for. */
const WATCHABLE = ['test://static-text', 'test://static-binary', 'test://watched-resource'];

/** The text of a sampling result's first content block (`content` is one block or a list of them). */
const firstText = result => (Array.isArray(result.content) ? result.content[0] : result.content)?.text;

/**
 * Asks the client's model `prompt` (in band, on either era: see the header), says what it answered.
 * The SDK refuses to ask a client that did not declare sampling: -32021 on 2026-07-28, a tool
 * error on a session.
 */
function sampled(ctx, prompt) {
    const answer = inputResponse(ctx.mcpReq.inputResponses, 'sampling');
    if (answer.kind !== 'sampling') return inputRequired({ inputRequests: { sampling: sample(prompt, 100) } });
    return text(`LLM response: ${firstText(answer.result) ?? ''}`);
}

/** Asks the user for `requestedSchema`, as `sampled` asks the model; says what came back. */
function elicited(ctx, message, requestedSchema) {
    const answer = inputResponse(ctx.mcpReq.inputResponses, 'elicitation');
    if (answer.kind !== 'elicit') {
        return inputRequired({ inputRequests: { elicitation: inputRequired.elicit({ message, requestedSchema }) } });
    }
    return text(`Elicitation completed: action=${answer.action}, content=${JSON.stringify(answer.content ?? null)}`);
}

const TITLED = ['First', 'Second', 'Third'].map((title, i) => ({ const: `value${i + 1}`, title }));
/** The form with a default for every primitive type (SEP-1034). */
const WITH_DEFAULTS = {
    type: 'object',
    properties: {
        name: { type: 'string', description: 'User name', default: 'John Doe' },
        age: { type: 'integer', description: 'User age', default: 30 },
        score: { type: 'number', description: 'User score', default: 95.5 },
        status: { type: 'string', enum: ['active', 'inactive', 'pending'], default: 'active' },
        verified: { type: 'boolean', description: 'Verified', default: true }
    }
};
/** The form with each of the five enum forms (SEP-1330). */
const WITH_ENUMS = {
    type: 'object',
    properties: {
        untitledSingle: { type: 'string', enum: ['option1', 'option2', 'option3'] },
        titledSingle: { type: 'string', oneOf: TITLED },
        legacyEnum: {
            type: 'string',
            enum: ['opt1', 'opt2', 'opt3'],
            enumNames: ['Option One', 'Option Two', 'Option Three']
        },
        untitledMulti: { type: 'array', items: { type: 'string', enum: ['option1', 'option2', 'option3'] } },
        titledMulti: { type: 'array', items: { anyOf: TITLED } }
    }
};

/** `done` once the client confirmed with the (sealed) request state `state`; else the question, with it. */
async function confirmed(ctx, state, done) {
    if (ctx.mcpReq.requestState() === state && acceptedContent(ctx.mcpReq.inputResponses, 'confirm') !== undefined) {
        return text(done);
    }
    return inputRequired({
        inputRequests: { confirm: ask('Please confirm', 'ok', 'boolean') },
        requestState: await sealed.mint(state)
    });
}

/**
 * A server with the whole surface, for one request (2026-07-28, as `createMcpHandler` builds it) or
 * one session (the handshake era: `legacy` adds what only a session serves).
 */
function build() {
    const server = new McpServer(
        { name: 'conformance-reference', version: '1.0.0' },
        {
            cacheHints: CACHE_HINTS,
            requestState: { verify: sealed.verify },
            // Logs go where a session's `logging/setLevel` or a request's envelope lets them;
            // updates of resources to a session's subscriptions or to the listen streams'.
            capabilities: { logging: {}, resources: { subscribe: true } }
        }
    );

    // ---- tools the carried-over scenarios call ----
    server.registerTool('test_simple_text', { description: 'Returns simple text.' }, () =>
        text('This is a simple text response for testing.')
    );
    server.registerTool('test_image_content', { description: 'Returns an image.' }, () => ({
        content: [{ type: 'image', data: PNG, mimeType: 'image/png' }]
    }));
    server.registerTool('test_audio_content', { description: 'Returns audio.' }, () => ({
        content: [{ type: 'audio', data: WAV, mimeType: 'audio/wav' }]
    }));
    server.registerTool('test_embedded_resource', { description: 'Returns an embedded resource.' }, () => ({
        content: [embedded('test://embedded-resource')]
    }));
    server.registerTool('test_multiple_content_types', { description: 'Returns text, an image and a resource.' }, () => ({
        content: [
            { type: 'text', text: 'Multiple content types test:' },
            { type: 'image', data: PNG, mimeType: 'image/png' },
            embedded('test://mixed-content-resource')
        ]
    }));
    server.registerTool('test_error_handling', { description: 'Always fails.' }, () => {
        throw new Error('This tool intentionally returns an error for testing');
    });
    server.registerTool('test_tool_with_progress', { description: 'Reports progress 0, 50 and 100 of 100.' }, async ctx => {
        const progressToken = ctx.mcpReq._meta?.progressToken;
        for (const progress of [0, 50, 100]) {
            if (progressToken !== undefined) {
                await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken, progress, total: 100 } });
            }
            await sleep(50);
        }
        return text('Tool with progress executed successfully');
    });
    server.registerTool(
        'json_schema_2020_12_tool',
        { description: 'Tool with JSON Schema 2020-12 features', inputSchema: fromJsonSchema(SCHEMA_2020_12) },
        args => text(`Contact ${args?.name ?? ''}`)
    );

    // ---- the stateless diagnostics (SEP-2575) ----
    // McpServer turns whatever a tool throws into an `isError` result, a -32021 included; the
    // SDK's own capability gate answers -32021 (HTTP 400 on 2026-07-28) when a tool asks a
    // client for input it did not declare it can give: this one asks for a sample then.
    server.registerTool('test_missing_capability', { description: "Needs the client's sampling capability." }, ctx => {
        if (!clientCapabilities(ctx, server)?.sampling) {
            return inputRequired({ inputRequests: { sample: sample('This tool needs sampling.', 10) } });
        }
        return text('sampling declared');
    });
    server.registerTool(
        'test_streaming_elicitation',
        { description: 'Answers with a result only (no server-to-client request on the stream).' },
        () => text('no independent requests')
    );
    server.registerTool('test_logging_tool', { description: 'Logs, which the request-scoped log level gates.' }, async ctx => {
        await ctx.mcpReq.log('info', 'test_logging_tool ran');
        return text('logged');
    });
    const triggers = [
        ['tool', added.tools, addTool, () => modern.notify.toolsChanged()],
        ['prompt', added.prompts, addPrompt, () => modern.notify.promptsChanged()]
    ];
    for (const [kind, list, add, announce] of triggers) {
        server.registerTool(
            `test_trigger_${kind}_change`,
            { description: `Adds a ${kind}, and announces the change to subscriptions/listen streams.` },
            () => {
                const name = `test_added_${kind}_${++changes}`;
                list.push(name);
                for (const open of sessions.values()) add(open.server, name);
                announce();
                return text(`added ${name}`);
            }
        );
    }

    // ---- the handshake era's scenarios: sampling, elicitation, logging, subscriptions ----
    server.registerTool(
        'test_sampling',
        { description: "Asks the client's LLM.", inputSchema: z.object({ prompt: z.string() }) },
        ({ prompt }, ctx) => sampled(ctx, prompt)
    );
    server.registerTool(
        'test_elicitation',
        { description: 'Asks the user for a username and an email.', inputSchema: z.object({ message: z.string() }) },
        ({ message }, ctx) =>
            elicited(ctx, message, {
                type: 'object',
                properties: {
                    username: { type: 'string', description: "User's response" },
                    email: { type: 'string', description: "User's email address" }
                },
                required: ['username', 'email']
            })
    );
    server.registerTool(
        'test_elicitation_sep1034_defaults',
        { description: 'Asks with a default for every primitive type.' },
        ctx => elicited(ctx, 'Please review and update the form fields with defaults', WITH_DEFAULTS)
    );
    server.registerTool(
        'test_elicitation_sep1330_enums',
        { description: 'Asks with each of the five enum forms.' },
        ctx => elicited(ctx, 'Please select options from the enum fields', WITH_ENUMS)
    );
    server.registerTool('test_tool_with_logging', { description: 'Logs three messages while it runs.' }, async ctx => {
        await ctx.mcpReq.log('info', 'Tool execution started');
        await sleep(50);
        await ctx.mcpReq.log('info', 'Tool processing data');
        await sleep(50);
        await ctx.mcpReq.log('info', 'Tool execution completed');
        return text('Tool with logging executed successfully');
    });
    server.registerTool(
        'test_touch_subscribed_resources',
        { description: 'Sends an update of each resource subscribed to, and says which they are.' },
        async () => {
            // The sessions' subscriptions, each to its subscriber; the listen streams' (2026-07-28)
            // are the SDK's, which passes on the update of a resource to the streams that ask for it.
            const uris = new Set();
            for (const open of sessions.values()) {
                for (const uri of open.subscribed) {
                    uris.add(uri);
                    await open.server.server.sendResourceUpdated({ uri }).catch(() => {});
                }
            }
            for (const uri of WATCHABLE) modern.notify.resourceUpdated(uri);
            return text('subscribed: ' + [...uris].sort().join(', '));
        }
    );

    // ---- multi round-trip requests (SEP-2322) ----
    server.registerTool('test_input_required_result_elicitation', { description: "Asks the user's name in band." }, ctx => {
        const answer = acceptedContent(ctx.mcpReq.inputResponses, 'user_name');
        if (typeof answer?.name !== 'string') {
            return inputRequired({ inputRequests: { user_name: ask('What is your name?', 'name') } });
        }
        return text(`Hello, ${answer.name}!`);
    });
    server.registerTool('test_input_required_result_sampling', { description: "Asks the client's model in band." }, ctx => {
        const answer = inputResponse(ctx.mcpReq.inputResponses, 'capital_question');
        if (answer.kind !== 'sampling') {
            return inputRequired({ inputRequests: { capital_question: sample('What is the capital of France?', 100) } });
        }
        return text(`The model said: ${firstText(answer.result) ?? '?'}`);
    });
    server.registerTool('test_input_required_result_list_roots', { description: "Asks the client's roots in band." }, ctx => {
        const answer = inputResponse(ctx.mcpReq.inputResponses, 'client_roots');
        if (answer.kind !== 'roots') {
            return inputRequired({ inputRequests: { client_roots: inputRequired.listRoots() } });
        }
        return text('Roots: ' + answer.roots.map(root => root.uri).join(', '));
    });
    server.registerTool(
        'test_input_required_result_request_state',
        { description: 'Round-trips a request state (sealed by the SDK).' },
        ctx => confirmed(ctx, 'confirm-pending', 'state-ok: confirmation received')
    );
    server.registerTool(
        'test_input_required_result_multiple_inputs',
        { description: 'Asks three kinds of input at once.' },
        async ctx => {
            const answered = Object.keys(ctx.mcpReq.inputResponses ?? {});
            if (['user_name', 'greeting', 'client_roots'].every(key => answered.includes(key))) {
                return text('All inputs received.');
            }
            return inputRequired({
                inputRequests: {
                    user_name: ask('What is your name?', 'name'),
                    greeting: sample('Generate a greeting', 50),
                    client_roots: inputRequired.listRoots()
                },
                requestState: await sealed.mint('multiple-inputs')
            });
        }
    );
    server.registerTool(
        'test_input_required_result_multi_round',
        { description: 'Two rounds of questions, the state evolving.' },
        async ctx => {
            const state = ctx.mcpReq.requestState() ?? {};
            const step1 = acceptedContent(ctx.mcpReq.inputResponses, 'step1');
            if (state.round === 1 && step1) {
                return inputRequired({
                    inputRequests: { step2: ask('Step 2: What is your favorite color?', 'color') },
                    requestState: await sealed.mint({ round: 2, name: step1.name })
                });
            }
            const step2 = acceptedContent(ctx.mcpReq.inputResponses, 'step2');
            if (state.round === 2 && step2) {
                return text(`${state.name} likes ${step2.color}.`);
            }
            return inputRequired({
                inputRequests: { step1: ask('Step 1: What is your name?', 'name') },
                requestState: await sealed.mint({ round: 1 })
            });
        }
    );
    server.registerTool(
        'test_input_required_result_tampered_state',
        { description: 'Its state is sealed by the SDK: a tampered one is refused before this runs.' },
        ctx => confirmed(ctx, 'sealed', 'state-ok')
    );
    server.registerTool(
        'test_input_required_result_capabilities',
        { description: 'Asks only for what the client declared it can answer.' },
        ctx => {
            if (Object.keys(ctx.mcpReq.inputResponses ?? {}).length > 0) return text('answered');
            const caps = clientCapabilities(ctx, server) ?? {};
            const inputRequests = {};
            if (caps.elicitation) inputRequests.user_name = ask('What is your name?', 'name');
            if (caps.sampling) inputRequests.greeting = sample('Generate a greeting', 50);
            if (caps.roots) inputRequests.client_roots = inputRequired.listRoots();
            return Object.keys(inputRequests).length > 0 ? inputRequired({ inputRequests }) : text('nothing to ask');
        }
    );
    server.registerPrompt(
        'test_input_required_result_prompt',
        { description: 'A prompt that asks for context in band.' },
        ctx => {
            const answer = acceptedContent(ctx.mcpReq.inputResponses, 'user_context');
            if (answer === undefined) {
                return inputRequired({
                    inputRequests: { user_context: ask('What context should the prompt use?', 'context') }
                });
            }
            return { messages: [user(`Use this context: ${answer.context}`)] };
        }
    );

    // ---- resources, prompts, completion ----
    server.registerResource(
        'static_text',
        'test://static-text',
        { description: 'A static text resource.', mimeType: 'text/plain' },
        uri => ({
            contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'This is the content of the static text resource.' }]
        })
    );
    server.registerResource(
        'static_binary',
        'test://static-binary',
        { description: 'A static binary resource (a PNG image).', mimeType: 'image/png' },
        uri => ({ contents: [{ uri: uri.href, mimeType: 'image/png', blob: PNG }] })
    );
    server.registerResource(
        'template_data',
        new ResourceTemplate('test://template/{id}/data', { list: undefined, complete: { id: suggest } }),
        { description: 'Data of the item `id`.', mimeType: 'application/json' },
        (uri, { id }) => ({
            contents: [
                {
                    uri: uri.href,
                    mimeType: 'application/json',
                    text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` })
                }
            ]
        })
    );

    server.registerResource(
        'watched',
        'test://watched-resource',
        { description: 'A resource clients may subscribe to.', mimeType: 'text/plain' },
        uri => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'Watched resource content' }] })
    );

    server.registerPrompt('test_simple_prompt', { description: 'A prompt without arguments.' }, () => ({
        messages: [user('This is a simple prompt for testing.')]
    }));
    server.registerPrompt(
        'test_prompt_with_arguments',
        {
            description: 'A prompt with two required arguments.',
            argsSchema: z.object({ arg1: completable(z.string(), suggest), arg2: completable(z.string(), suggest) })
        },
        ({ arg1, arg2 }) => ({ messages: [user(`Prompt with arguments: arg1='${arg1}', arg2='${arg2}'`)] })
    );
    server.registerPrompt(
        'test_prompt_with_embedded_resource',
        { description: 'A prompt that embeds a resource.', argsSchema: z.object({ resourceUri: z.string() }) },
        ({ resourceUri }) => ({
            messages: [
                user(embedded(resourceUri, 'Embedded resource content for testing.')),
                user('Please process the embedded resource above.')
            ]
        })
    );
    server.registerPrompt('test_prompt_with_image', { description: 'A prompt with an image.' }, () => ({
        messages: [user({ type: 'image', data: PNG, mimeType: 'image/png' }), user('Please analyze the image above.')]
    }));

    for (const name of added.tools) addTool(server, name);
    for (const name of added.prompts) addPrompt(server, name);
    return server;
}

// ---- serving ----
const modern = createMcpHandler(build, { legacy: 'reject' });

const jsonRpcError = (status, code, message) =>
    new Response(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }), {
        status,
        headers: { 'content-type': 'application/json' }
    });

/** The handshake era: a session per `initialize`, its own server over a sessionful transport. */
async function legacy(request) {
    const id = request.headers.get('mcp-session-id');
    if (id) {
        const open = sessions.get(id);
        return open ? open.transport.handleRequest(request) : jsonRpcError(404, -32001, 'Session not found');
    }
    if (request.method !== 'POST') return jsonRpcError(400, -32000, 'Bad Request: no session');
    const server = build();
    // What only a session serves: subscriptions to resources, its own.
    const subscribed = new Set();
    server.server.setRequestHandler('resources/subscribe', ({ params }) => {
        subscribed.add(params.uri);
        return {};
    });
    server.server.setRequestHandler('resources/unsubscribe', ({ params }) => {
        subscribed.delete(params.uri);
        return {};
    });
    const transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: sessionId => sessions.set(sessionId, { server, transport, subscribed })
    });
    // Closed by a DELETE or otherwise, the session is gone (`connect` keeps this and chains its own).
    transport.onclose = () => sessions.delete(transport.sessionId);
    await server.connect(transport);
    const response = await transport.handleRequest(request);
    // Not an `initialize` (the transport refused it): nothing to keep.
    if (transport.sessionId === undefined) await server.close();
    return response;
}

async function serve(request) {
    if (new URL(request.url).pathname !== '/mcp') return new Response('Not Found', { status: 404 });
    const rejected =
        hostHeaderValidationResponse(request, localhostAllowedHostnames()) ??
        originValidationResponse(request, localhostAllowedOrigins());
    if (rejected) return rejected;
    return (await isLegacyRequest(request)) ? legacy(request) : modern.fetch(request);
}

const port = Number(process.argv[2]);
if (!Number.isInteger(port) || port <= 0) {
    console.error('usage: node reference-server-2026.mjs <port>');
    process.exit(2);
}
const onerror = error => console.error('reference-server-2026:', error);
http.createServer(toNodeHandler({ fetch: serve }, { onerror })).listen(port, '127.0.0.1', () => {
    console.log(`listening on http://127.0.0.1:${port}/mcp`);
});
