-- The owner's ceiling for a tenant: the tags, sources (servers, built-ins, external tool sets)
-- and groups it may use at all. Null: no limit.
alter table tenant
    add column ceiling_tags text[],
    add column ceiling_sources text[],
    add column ceiling_groups text[];
