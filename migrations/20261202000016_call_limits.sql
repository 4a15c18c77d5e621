-- Call limits: of a tenant (all its calls), of one tool of a tenant (by default exposed name),
-- and of an API key. Each is {"per_minute": n, "per_day": n, "concurrent": n}, any left out.
alter table tenant
    add column limits jsonb not null default '{}',
    add column tool_limits jsonb not null default '{}';
alter table api_key add column limits jsonb not null default '{}';

-- Calls counted against the limits, per window, summed over the replicas: each replica adds
-- what it admitted since its last sync (about once a second), not a write per call.
create table call_usage (
    -- The tenant or the API key whose limit counts the calls.
    subject uuid not null,
    -- A tool's default exposed name for a tool's limit; '' for the subject's own.
    tool text not null default '',
    span text not null check (span in ('minute', 'day')),
    window_start timestamptz not null,
    calls bigint not null,
    primary key (subject, tool, span, window_start)
);
create index call_usage_window on call_usage (window_start);
