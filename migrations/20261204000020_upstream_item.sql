-- What upstream MCP servers offer besides tools: prompts, resources and resource templates,
-- discovered with the tools and served under their server's rules (its tags, each tenant's
-- whitelist and ceiling). A change moves the tool epoch: a catalog rebuild reads them with
-- the tools.
create table upstream_item (
    source_id uuid not null references source (id) on delete cascade,
    kind text not null check (kind in ('prompt', 'resource', 'resource_template')),
    -- A prompt's name, a resource's URI, a template's URI template.
    key text not null check (length(key) between 1 and 2048),
    -- The definition as the server listed it, its description capped.
    definition jsonb not null check (jsonb_typeof(definition) = 'object'),
    primary key (source_id, kind, key)
);

create trigger upstream_item_epoch after insert or update or delete or truncate on upstream_item
    for each statement execute function bump_tool_epoch();
