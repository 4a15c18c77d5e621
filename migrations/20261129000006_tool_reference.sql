-- Group memberships and tenant overrides name a tool by (source, upstream name) instead of
-- the tool row, so they survive an upstream that drops a tool for a while, and a
-- configuration can name tools of a server that has not been discovered yet.

alter table tool_group_member add column source_id uuid references source (id) on delete cascade;
alter table tool_group_member add column upstream_name text;
update tool_group_member m set source_id = t.source_id, upstream_name = t.upstream_name
    from tool t where t.id = m.tool_id;
alter table tool_group_member drop constraint tool_group_member_pkey;
alter table tool_group_member drop column tool_id;
alter table tool_group_member alter column source_id set not null;
alter table tool_group_member alter column upstream_name set not null;
alter table tool_group_member add primary key (group_id, source_id, upstream_name);
create index tool_group_member_tool on tool_group_member (source_id, upstream_name);

alter table tool_override add column source_id uuid references source (id) on delete cascade;
alter table tool_override add column upstream_name text;
update tool_override o set source_id = t.source_id, upstream_name = t.upstream_name
    from tool t where t.id = o.tool_id;
alter table tool_override drop constraint tool_override_pkey;
alter table tool_override drop column tool_id;
alter table tool_override alter column source_id set not null;
alter table tool_override alter column upstream_name set not null;
alter table tool_override add primary key (tenant_id, source_id, upstream_name);
