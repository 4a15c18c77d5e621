-- Calls dropped before they finished (the client cancelled, or went away) are recorded too.
alter table invocation drop constraint invocation_status_check;
alter table invocation add constraint invocation_status_check
    check (status in ('ok', 'tool_error', 'failed', 'timeout', 'suspended', 'cancelled'));
