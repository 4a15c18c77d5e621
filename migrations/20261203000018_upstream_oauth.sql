-- Upstream MCP servers protected by OAuth: Toolgate is their OAuth client, and holds a token
-- for the whole gateway, per tenant, or per person.

create table mcp_oauth (
    source_id uuid primary key references mcp_server (source_id) on delete cascade,
    -- Whose token a call uses: one for every tenant, each tenant's own, or each person's own.
    mode text not null check (mode in ('shared', 'tenant', 'user')),
    -- `client_credentials` (machine to machine) needs a client the admin registered.
    grant_type text not null default 'authorization_code'
        check (grant_type in ('authorization_code', 'client_credentials')),
    -- A client the admin registered with the provider; without one Toolgate registers itself
    -- (its Client ID Metadata Document, or dynamic registration) at the first authorization.
    client_id text check (length(client_id) between 1 and 2000),
    -- Sealed like every secret.
    client_secret text,
    scopes text[] not null default '{}',
    -- The client Toolgate registered dynamically: {"issuer", "client_id", "client_secret"
    -- (sealed) | null}; kept, so every authorization of the server uses one client.
    registered jsonb check (registered is null or jsonb_typeof(registered) = 'object'),
    check (client_secret is null or client_id is not null),
    check (grant_type = 'authorization_code' or (client_secret is not null and mode = 'shared'))
);

-- A token Toolgate holds for a server: the shared one (no tenant, no person), a tenant's, or a
-- person's. Kept when it stops working, so the panel can say it needs authorizing again.
create table mcp_authorization (
    id uuid primary key default gen_random_uuid(),
    source_id uuid not null references mcp_oauth (source_id) on delete cascade,
    tenant_id uuid references tenant (id) on delete cascade,
    account_id uuid references admin_user (id) on delete cascade,
    check (tenant_id is null or account_id is null),
    -- rmcp's stored credentials (tokens, client id, scopes, issuer) as JSON, sealed; null while
    -- the authorization must be given again.
    credentials text,
    check ((credentials is null) = (status = 'needs_authorization')),
    -- When the access token expires (refreshed before then).
    expires_at timestamptz,
    status text not null check (status in ('active', 'needs_authorization')),
    -- Why it needs authorizing again (never a token).
    reason text,
    authorized_by text not null,
    authorized_at timestamptz not null default now(),
    refreshed_at timestamptz
);
create unique index mcp_authorization_owner on mcp_authorization (
    source_id,
    coalesce(tenant_id, '00000000-0000-0000-0000-000000000000'),
    coalesce(account_id, '00000000-0000-0000-0000-000000000000')
);
create index mcp_authorization_account on mcp_authorization (account_id) where account_id is not null;

-- Authorizations under way: the PKCE verifier and state rmcp keeps between sending the person
-- to the provider and the provider sending them back. Ten minutes to finish.
create table mcp_authorization_flow (
    -- SHA-256 of the `state` parameter.
    state_hash bytea primary key,
    source_id uuid not null references mcp_oauth (source_id) on delete cascade,
    tenant_id uuid references tenant (id) on delete cascade,
    account_id uuid references admin_user (id) on delete cascade,
    -- Who started it: only their browser session may finish it.
    started_by uuid not null references admin_user (id) on delete cascade,
    -- The client the flow runs as (the token exchange must use the same one).
    client_id text not null,
    -- rmcp's stored authorization state (the PKCE verifier among it), sealed.
    state text not null,
    -- The panel page to go back to.
    return_to text not null check (return_to like '/%'),
    created_at timestamptz not null default now()
);
