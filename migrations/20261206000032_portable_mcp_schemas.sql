-- MCP clients get each tool's schema as its server published it (hidden preset parameters
-- removed); a tenant whose clients hand schemas straight to a strict LLM provider asks for the
-- portable, normalised schema instead, as the REST API serves it.
alter table tenant add column portable_mcp_schemas boolean not null default false;
