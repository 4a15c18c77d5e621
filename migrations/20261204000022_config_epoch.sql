-- Every configuration write moves this counter in its transaction, and a catalog rebuild reads
-- it with everything else: a process knows whether its snapshot holds a write it just made
-- (read-your-writes for the admin API and the panel).
alter table catalog_epoch add column config bigint not null default 0;
