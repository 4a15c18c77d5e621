-- Invocation records a replica could not write: dropped, oldest first, once its buffer of
-- unwritten records was full (PostgreSQL away too long), or refused by PostgreSQL one by one.
-- A row sums a run of them per tenant and reason; the dashboard says how many, and when.
create table invocation_loss (
    id bigint generated always as identity primary key,
    tenant_id uuid not null references tenant (id) on delete cascade,
    reason text not null check (reason in ('overflow', 'refused')),
    count bigint not null check (count > 0),
    first_at timestamptz not null,
    last_at timestamptz not null check (last_at >= first_at)
);
create index invocation_loss_tenant_at on invocation_loss (tenant_id, last_at desc);
create index invocation_loss_at on invocation_loss (last_at);
