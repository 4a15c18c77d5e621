-- The configuration Toolgate serves from: tenants, tool sources and their tools, groups,
-- per-tenant choices, API keys, and the audit and invocation records.

-- Global settings: exactly one row.
create table setting (
    id boolean primary key default true check (id),
    -- The global switch: false turns every tool off for every tenant.
    tools_enabled boolean not null default true,
    -- Enabled tags of a tenant that sets none.
    default_tags text[] not null default '{}',
    updated_at timestamptz not null default now()
);
insert into setting default values;
create trigger setting_updated_at before update on setting
    for each row execute function set_updated_at();

create table tenant (
    id uuid primary key default gen_random_uuid(),
    slug text not null unique check (slug ~ '^[a-z0-9-]{1,40}$'),
    name text not null check (length(name) between 1 and 200),
    -- Tag whitelist; null = use setting.default_tags, '{}' = every tag.
    enabled_tags text[],
    -- Expose the meta tool `reset_equipped_tools` to this tenant's sessions.
    meta_tool boolean not null default false,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
);
create trigger tenant_updated_at before update on tenant
    for each row execute function set_updated_at();

-- Where tools come from: compiled-in providers, upstream MCP servers, or schema-only tools
-- the caller executes.
create table source (
    id uuid primary key default gen_random_uuid(),
    kind text not null check (kind in ('builtin', 'mcp', 'external')),
    name text not null unique check (name ~ '^[A-Za-z0-9_-]{1,64}$'),
    -- Exposed names are <prefix>_<tool>; '' keeps the upstream names.
    prefix text not null check (prefix ~ '^[A-Za-z0-9_-]{0,32}$'),
    tags text[] not null default '{}',
    enabled boolean not null default true,
    -- null = shared by every tenant; else owned by (and visible to) one tenant.
    tenant_id uuid references tenant (id) on delete cascade,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
);
create trigger source_updated_at before update on source
    for each row execute function set_updated_at();

create table tool (
    id uuid primary key default gen_random_uuid(),
    source_id uuid not null references source (id) on delete cascade,
    upstream_name text not null check (length(upstream_name) between 1 and 512),
    description text not null default '',
    input_schema jsonb not null check (jsonb_typeof(input_schema) = 'object'),
    output_schema jsonb check (output_schema is null or jsonb_typeof(output_schema) = 'object'),
    annotations jsonb not null default '{}' check (jsonb_typeof(annotations) = 'object'),
    -- The tool's own tags; its effective tags are these and its source's.
    tags text[] not null default '{}',
    strict boolean not null default false,
    timeout_ms integer check (timeout_ms > 0),
    -- Hash of the definition (description, schemas, annotations) for pinning.
    definition_hash text not null,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    unique (source_id, upstream_name)
);
create trigger tool_updated_at before update on tool
    for each row execute function set_updated_at();

create table tool_group (
    id uuid primary key default gen_random_uuid(),
    name text not null unique check (name ~ '^[A-Za-z0-9_-]{1,64}$'),
    description text not null default '',
    active_by_default boolean not null default true,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
);
create trigger tool_group_updated_at before update on tool_group
    for each row execute function set_updated_at();

create table tool_group_member (
    group_id uuid not null references tool_group (id) on delete cascade,
    tool_id uuid not null references tool (id) on delete cascade,
    primary key (group_id, tool_id)
);
create index tool_group_member_tool on tool_group_member (tool_id);

-- A tenant's override of a group's active_by_default.
create table tenant_group (
    tenant_id uuid not null references tenant (id) on delete cascade,
    group_id uuid not null references tool_group (id) on delete cascade,
    active boolean not null,
    primary key (tenant_id, group_id)
);

-- A tenant's choices for one tool; a null column keeps the tool's own value.
create table tool_override (
    tenant_id uuid not null references tenant (id) on delete cascade,
    tool_id uuid not null references tool (id) on delete cascade,
    enabled boolean not null default true,
    exposed_name text check (exposed_name ~ '^[a-zA-Z0-9_-]{1,64}$'),
    description text,
    -- Fixed argument values, removed from the schema the LLM sees and injected at execution.
    presets jsonb not null default '{}' check (jsonb_typeof(presets) = 'object'),
    -- Same, encrypted: {"name": "v1:<base64 nonce+ciphertext>"}. Never returned once saved.
    secret_presets jsonb not null default '{}' check (jsonb_typeof(secret_presets) = 'object'),
    timeout_ms integer check (timeout_ms > 0),
    updated_at timestamptz not null default now(),
    primary key (tenant_id, tool_id)
);
create trigger tool_override_updated_at before update on tool_override
    for each row execute function set_updated_at();

create table api_key (
    id uuid primary key default gen_random_uuid(),
    tenant_id uuid not null references tenant (id) on delete cascade,
    name text not null check (length(name) between 1 and 100),
    -- The first characters of the key, shown to tell keys apart.
    prefix text not null,
    -- SHA-256 of the whole key; the key itself is shown once and never stored.
    key_hash bytea not null unique,
    created_at timestamptz not null default now(),
    last_used_at timestamptz,
    revoked_at timestamptz
);
create index api_key_tenant on api_key (tenant_id);

create table audit_event (
    id bigint generated always as identity primary key,
    at timestamptz not null default now(),
    -- "admin:<username>", "token:<name>", "cli" or "system".
    actor text not null,
    action text not null,
    entity_kind text not null,
    entity_id text not null,
    -- Secrets are redacted before they get here.
    before jsonb,
    after jsonb
);
create index audit_event_at on audit_event (at desc);
create index audit_event_entity on audit_event (entity_kind, entity_id);

create table invocation (
    id bigint generated always as identity primary key,
    at timestamptz not null default now(),
    tenant_id uuid not null references tenant (id) on delete cascade,
    tool_name text not null,
    -- "key:<api key id>" or "admin:<username>".
    caller text not null,
    status text not null check (status in ('ok', 'tool_error', 'failed', 'timeout', 'suspended')),
    latency_us bigint not null check (latency_us >= 0),
    result_bytes integer not null check (result_bytes >= 0),
    correlation_id text,
    -- Redacted: preset and secret values never appear here.
    arguments jsonb not null default '{}'
);
create index invocation_tenant_at on invocation (tenant_id, at desc);
