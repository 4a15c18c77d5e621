-- The tenants a tenant administrator may see and manage (owners manage every tenant).
create table admin_tenant (
    admin_id uuid not null references admin_user (id) on delete cascade,
    tenant_id uuid not null references tenant (id) on delete cascade,
    primary key (admin_id, tenant_id)
);
create index admin_tenant_tenant on admin_tenant (tenant_id);
