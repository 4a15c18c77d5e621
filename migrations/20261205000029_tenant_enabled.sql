-- A disabled tenant keeps everything but is served nothing: its endpoints refuse every key and
-- access token until an owner enables it again.
alter table tenant add column enabled boolean not null default true;
