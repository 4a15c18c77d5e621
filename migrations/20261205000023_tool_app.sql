-- MCP Apps: the part of a tool's `_meta` that hosts read to show the tool's app (`ui`, with
-- the `ui://` resource it opens), kept from discovery, pinned with the definition and served
-- with the tool.
alter table tool add column meta jsonb check (meta is null or jsonb_typeof(meta) = 'object');
