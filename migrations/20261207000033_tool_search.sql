-- How a tenant's tools reach the LLM: all listed (`list`), or found by a search tool
-- (`search`), with the tools an admin pins (by exposed name) always listed.
alter table tenant
    add column tool_discovery text not null default 'list' check (tool_discovery in ('list', 'search')),
    add column pinned_tools text[] not null default '{}';

-- The tools a key or a person's grant found by searching, callable by it for an hour
-- (a tenant in `search` mode lists only what was found, and every replica reads this).
create table tool_find (
    tenant_id uuid not null references tenant (id) on delete cascade,
    owner_id uuid not null,
    tool text not null,
    found_at timestamptz not null default now(),
    primary key (tenant_id, owner_id, tool)
);
create index tool_find_found_at on tool_find (found_at);
