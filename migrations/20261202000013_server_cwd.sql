-- A stdio server's working directory (an absolute path); null = Toolgate's own.
alter table mcp_server add column cwd text;
