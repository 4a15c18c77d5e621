-- Every replica serving a session hears when it ends, however its row goes (a DELETE on any
-- replica, expiry, its key or grant removed): the session's id on `toolgate_mcp_session_ended`.
create function mcp_session_ended() returns trigger language plpgsql as $$
begin
    perform pg_notify('toolgate_mcp_session_ended', old.id);
    return null;
end $$;

create trigger mcp_session_ended after delete on mcp_session
    for each row execute function mcp_session_ended();
