-- Tokens for scripts using the admin API (`toolgate admin token create`); owner rights.
create table admin_token (
    id uuid primary key default gen_random_uuid(),
    name text not null check (length(name) between 1 and 100),
    -- SHA-256 of the token; the token itself is printed once and never stored.
    token_hash bytea not null unique,
    created_at timestamptz not null default now(),
    revoked_at timestamptz
);
