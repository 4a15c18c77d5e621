-- A server that refused an authorization's token for want of scope (403 insufficient_scope)
-- named the scope it wants: every later authorization by the same owner asks for it, with the
-- scopes granted before (SEP-2350).
alter table mcp_authorization add column wanted_scopes text[] not null default '{}';
