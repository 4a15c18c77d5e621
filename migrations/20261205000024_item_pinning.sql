-- A prompt's listing (its description and arguments: what an LLM is told of it) is pinned like
-- a tool's definition. A changed listing waits in `pending` for an owner's approval while the
-- pinned one is served, or the prompt is held (not served) under the server's `hold` rule and
-- after a rejection.
alter table upstream_item
    add column pending jsonb check (pending is null or jsonb_typeof(pending) = 'object'),
    add column held boolean not null default false;
