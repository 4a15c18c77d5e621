-- Whether the built-in `shell` tools (`run_command`: allow-listed programs on the gateway's
-- host) are within a tenant's ceiling. Tenants made before keep them; a new tenant starts
-- without them until an owner allows them.
alter table tenant add column ceiling_shell boolean not null default true;
alter table tenant alter column ceiling_shell set default false;
