-- Upstream MCP servers (a source of kind 'mcp' each) and tool-definition pinning.

create table mcp_server (
    source_id uuid primary key references source (id) on delete cascade,
    transport text not null check (transport in ('streamable_http', 'sse', 'stdio')),
    url text,
    command text,
    args text[] not null default '{}',
    -- Environment of a stdio server: {"NAME": "value" | {"secret": "v1:..."}}.
    env jsonb not null default '{}' check (jsonb_typeof(env) = 'object'),
    -- Headers sent to the server: {"Name": "v1:..."}, always encrypted.
    headers jsonb not null default '{}' check (jsonb_typeof(headers) = 'object'),
    -- When a pinned tool's definition changes upstream: hide it until approved ('hold'), or
    -- keep serving the pinned definition ('keep_pinned').
    on_definition_change text not null default 'hold'
        check (on_definition_change in ('hold', 'keep_pinned')),
    -- Whether tools that appear after registration are served before an admin looks.
    new_tools_enabled boolean not null default false,
    check ((transport = 'stdio') = (command is not null)),
    check ((transport = 'stdio') = (url is null))
);

-- Per-tenant credentials for a shared server; such connections are private to the tenant.
create table mcp_credential (
    source_id uuid not null references mcp_server (source_id) on delete cascade,
    tenant_id uuid not null references tenant (id) on delete cascade,
    headers jsonb not null check (jsonb_typeof(headers) = 'object'),
    primary key (source_id, tenant_id)
);

-- A held tool is not served: its upstream definition changed and awaits approval, or it is a
-- new tool of a server that does not serve new tools unreviewed.
alter table tool add column held boolean not null default false;

-- The definition an upstream now publishes for a pinned tool, awaiting an admin's decision.
create table tool_pending_definition (
    tool_id uuid primary key references tool (id) on delete cascade,
    definition jsonb not null,
    definition_hash text not null,
    seen_at timestamptz not null default now()
);
