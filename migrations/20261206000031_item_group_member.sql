-- Prompts, resources and resource templates in tool groups: an item in groups is served to a
-- tenant when one of its groups is active for the tenant, as a tool is. Named by server and
-- the item's own key, so a membership holds before the item is discovered.
create table item_group_member (
    group_id uuid not null references tool_group (id) on delete cascade,
    source_id uuid not null references source (id) on delete cascade,
    kind text not null check (kind in ('prompt', 'resource', 'resource_template')),
    key text not null check (length(key) between 1 and 2048),
    primary key (group_id, source_id, kind, key)
);
