-- MCP sessions of the handshake era, shared by the replicas: any replica continues a session
-- (rmcp replays the handshake from `initialize`), each stays bound to the key that opened it,
-- and the groups it equipped with the meta tool follow it.
create table mcp_session (
    id text primary key,
    -- Null until the replica that created the session has bound it to its key.
    key_id uuid references api_key (id) on delete cascade,
    -- Null until the handshake succeeded.
    initialize jsonb,
    equipped text[],
    seen_at timestamptz not null default now()
);
create index mcp_session_key on mcp_session (key_id);
create index mcp_session_seen on mcp_session (seen_at);
