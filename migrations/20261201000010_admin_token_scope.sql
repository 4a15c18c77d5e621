-- Admin tokens can expire, be limited to reading or to one tenant, and record their last use.
alter table admin_token
    add column expires_at timestamptz,
    add column last_used_at timestamptz,
    add column read_only boolean not null default false,
    add column tenant_id uuid references tenant (id) on delete cascade;
