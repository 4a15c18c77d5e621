-- The first characters of an admin token, shown so that people can tell their tokens apart
-- (as API keys have). Tokens made before have none.
alter table admin_token add column prefix text;
