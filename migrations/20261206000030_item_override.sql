-- A tenant's choices for one prompt, resource or resource template of a server: hide it, give
-- a prompt another name, describe it differently. Named by the server and the item's own key,
-- so a choice holds before the item is discovered and survives the server's prefix changing;
-- a null column keeps the item's own value.
create table item_override (
    tenant_id uuid not null references tenant (id) on delete cascade,
    source_id uuid not null references source (id) on delete cascade,
    kind text not null check (kind in ('prompt', 'resource', 'resource_template')),
    key text not null check (length(key) between 1 and 2048),
    enabled boolean not null default true,
    exposed_name text check (exposed_name ~ '^[a-zA-Z0-9_-]{1,64}$'),
    description text check (length(description) <= 8192),
    check (exposed_name is null or kind = 'prompt'),
    primary key (tenant_id, source_id, kind, key)
);
