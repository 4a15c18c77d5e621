-- Shared helpers and the admin side of Toolgate: administrators and sign-in throttling.

-- Keeps `updated_at` honest on every table that has one.
create or replace function set_updated_at() returns trigger as $$
begin
    new.updated_at = now();
    return new;
end;
$$ language plpgsql;

create table admin_user (
    id uuid primary key default gen_random_uuid(),
    username text not null unique
        check (username ~ '^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$'),
    -- argon2id PHC string; never leaves the server.
    password_hash text not null check (password_hash like '$argon2id$%'),
    role text not null check (role in ('owner', 'tenant_admin')),
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
);

create trigger admin_user_updated_at before update on admin_user
    for each row execute function set_updated_at();

-- One row per failed sign-in; counted over a sliding window per username and per address,
-- so every replica applies the same limits.
create table login_failure (
    id bigint generated always as identity primary key,
    username text not null,
    address text not null,
    failed_at timestamptz not null default now()
);

create index login_failure_username on login_failure (username, failed_at);
create index login_failure_address on login_failure (address, failed_at);
