-- Calls to external (schema-only) tools: suspended until the caller posts the result. Kept in
-- PostgreSQL so any replica can resume a call another replica suspended.
create table pending_call (
    id uuid primary key default gen_random_uuid(),
    tenant_id uuid not null references tenant (id) on delete cascade,
    tool_name text not null,
    arguments jsonb not null,
    created_at timestamptz not null default now(),
    resolved_at timestamptz,
    result jsonb,
    check ((resolved_at is null) = (result is null))
);
create index pending_call_open on pending_call (tenant_id) where resolved_at is null;
