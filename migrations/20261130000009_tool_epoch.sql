-- Moves with every change to `tool`, in the same transaction: a catalog rebuild re-reads and
-- rebuilds the tools only when it moved (most changes are tenants' choices, not tools).
create table catalog_epoch (
    singleton boolean primary key default true check (singleton),
    tools bigint not null default 0
);
insert into catalog_epoch default values;

create function bump_tool_epoch() returns trigger language plpgsql as $$
begin
    update catalog_epoch set tools = tools + 1;
    return null;
end $$;

create trigger tool_epoch after insert or update or delete or truncate on tool
    for each statement execute function bump_tool_epoch();
