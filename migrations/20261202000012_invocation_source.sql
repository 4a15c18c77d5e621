-- The source (server, or built-in set) each call went to, for latency and errors per server.
-- Null for calls recorded before this column existed and for resumed calls (a person answered).
alter table invocation add column source text;
create index invocation_source_at on invocation (source, at desc) where source is not null;
