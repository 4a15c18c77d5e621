-- Sign-in for agents: tenant members, Toolgate as the OAuth 2.1 authorization server of its
-- own endpoints, and people signed in through an external OpenID Connect provider.

-- Accounts: `member` may authorize MCP clients for its tenants and sees only its own connected
-- apps. An account signed in through SSO has the provider's subject and no password; one
-- invited by link has neither until the invitation is taken.
alter table admin_user drop constraint admin_user_role_check;
alter table admin_user add constraint admin_user_role_check
    check (role in ('owner', 'tenant_admin', 'member'));
alter table admin_user alter column password_hash drop not null;
alter table admin_user drop constraint admin_user_password_hash_check;
alter table admin_user add constraint admin_user_password_hash_check
    check (password_hash is null or password_hash like '$argon2id$%');
alter table admin_user
    add column email text check (length(email) <= 320),
    add column sso_issuer text,
    add column sso_subject text,
    -- A disabled account cannot sign in; its sessions and tokens stop working at once.
    add column disabled_at timestamptz,
    add column signed_in_at timestamptz,
    add constraint admin_user_sso check ((sso_issuer is null) = (sso_subject is null));
create unique index admin_user_sso_subject on admin_user (sso_issuer, sso_subject)
    where sso_issuer is not null;

-- One-use links that let an invited member choose a password.
create table account_invite (
    -- SHA-256 of the link's token; the link is shown once.
    token_hash bytea primary key,
    admin_id uuid not null references admin_user (id) on delete cascade,
    expires_at timestamptz not null,
    created_at timestamptz not null default now()
);
create index account_invite_admin on account_invite (admin_id);

-- Which ways in a tenant accepts, and the limits on each signed-in person's calls.
alter table tenant
    add column api_keys_enabled boolean not null default true,
    add column oauth_enabled boolean not null default true,
    add column user_limits jsonb not null default '{}';

-- Sign-in settings: whether local passwords work for everyone, or only for one owner kept for
-- emergencies while everyone else signs in through the OpenID provider.
alter table setting
    add column local_passwords boolean not null default true,
    add column break_glass_owner text;

-- The external OpenID Connect provider (at most one).
create table sso_provider (
    id boolean primary key default true check (id),
    display_name text not null check (length(display_name) between 1 and 100),
    issuer text not null check (issuer ~ '^https?://'),
    client_id text not null check (length(client_id) between 1 and 500),
    -- Sealed like every secret; null for a public client.
    client_secret text,
    scopes text[] not null default '{openid,email,profile}',
    auth_method text not null default 'client_secret_basic'
        check (auth_method in ('client_secret_basic', 'client_secret_post')),
    -- Email-domain rules apply only to addresses the provider says are verified.
    require_verified_email boolean not null default true,
    -- The ID token claim holding the person's groups (Auth0 and others use a namespaced name).
    groups_claim text not null default 'groups' check (length(groups_claim) between 1 and 200),
    -- [{"email_domain" | "group": "...", "tenant": "slug" | null, "role": "..."}]
    rules jsonb not null default '[]' check (jsonb_typeof(rules) = 'array'),
    updated_at timestamptz not null default now()
);
create trigger sso_provider_updated_at before update on sso_provider
    for each row execute function set_updated_at();

-- OAuth clients: a Client ID Metadata Document's URL (fetched, cached here), one registered
-- dynamically (RFC 7591), or one an owner registered in the panel.
create table oauth_client (
    id text primary key check (length(id) between 1 and 2000),
    kind text not null check (kind in ('metadata_document', 'dynamic', 'preregistered')),
    name text not null check (length(name) between 1 and 200),
    redirect_uris text[] not null check (cardinality(redirect_uris) between 1 and 20),
    client_uri text,
    auth_method text not null
        check (auth_method in ('none', 'client_secret_basic', 'client_secret_post')),
    -- SHA-256 of the secret of a confidential client.
    secret_hash bytea,
    -- Where a dynamic registration came from (its rate limit counts by address).
    registered_from text,
    -- A metadata document is fetched again after this (its Cache-Control, within bounds).
    fresh_until timestamptz,
    created_at timestamptz not null default now(),
    check ((auth_method = 'none') = (secret_hash is null))
);
create index oauth_client_registered on oauth_client (registered_from, created_at)
    where kind = 'dynamic';

-- An authorization waiting for its person to sign in and consent.
create table oauth_request (
    id uuid primary key default gen_random_uuid(),
    client_id text not null references oauth_client (id) on delete cascade,
    redirect_uri text not null,
    state text,
    code_challenge text not null,
    resource text not null,
    -- The slug of the tenant whose endpoint `resource` names (not checked before sign-in, so a
    -- stranger learns nothing of which tenants exist); null for the REST API (chosen at consent).
    tenant text,
    scopes text[] not null,
    expires_at timestamptz not null,
    created_at timestamptz not null default now()
);
create index oauth_request_expiry on oauth_request (expires_at);

-- What a person allowed a client: the tokens of one tenant's endpoint with these scopes. It
-- is the remembered consent too, until revoked.
create table oauth_grant (
    id uuid primary key default gen_random_uuid(),
    account_id uuid not null references admin_user (id) on delete cascade,
    client_id text not null references oauth_client (id) on delete cascade,
    tenant_id uuid not null references tenant (id) on delete cascade,
    -- The endpoint the tokens are for (RFC 8707): `<base>/mcp/<tenant>` or `<base>/api/v1`.
    resource text not null,
    scopes text[] not null,
    created_at timestamptz not null default now(),
    last_used_at timestamptz,
    revoked_at timestamptz
);
create unique index oauth_grant_active on oauth_grant (account_id, client_id, tenant_id, resource)
    where revoked_at is null;
create index oauth_grant_tenant on oauth_grant (tenant_id);

-- Whether the person of a grant may still use it: their account is enabled, and they are an
-- owner or still of the grant's tenant (taken off it, their apps there stop working).
create function grant_usable(account uuid, tenant uuid) returns boolean
language sql stable as $$
    select exists (
        select from admin_user a
        where a.id = account and a.disabled_at is null
          and (a.role = 'owner'
               or exists (select from admin_tenant m where m.admin_id = a.id and m.tenant_id = tenant)))
$$;

-- Authorization codes (one use, a minute) and tokens, stored as SHA-256 like keys.
create table oauth_code (
    code_hash bytea primary key,
    grant_id uuid not null references oauth_grant (id) on delete cascade,
    redirect_uri text not null,
    code_challenge text not null,
    expires_at timestamptz not null,
    used_at timestamptz
);

create table oauth_token (
    token_hash bytea primary key,
    grant_id uuid not null references oauth_grant (id) on delete cascade,
    kind text not null check (kind in ('access', 'refresh')),
    expires_at timestamptz not null,
    -- A refresh token is used once: presenting it again revokes its whole grant.
    used_at timestamptz,
    created_at timestamptz not null default now()
);
create index oauth_token_grant on oauth_token (grant_id);
create index oauth_token_expiry on oauth_token (expires_at);

-- MCP sessions opened with an access token belong to its grant (a refreshed token continues
-- them), as those opened with a key belong to the key.
alter table mcp_session
    add column grant_id uuid references oauth_grant (id) on delete cascade,
    add constraint mcp_session_one_owner check (key_id is null or grant_id is null);
create index mcp_session_grant on mcp_session (grant_id);
