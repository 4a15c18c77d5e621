-- A password printed once (the first owner's, or one `toolgate admin create|reset-password`
-- generated): its account chooses its own at the next sign-in before anything else.
alter table admin_user add column password_temporary boolean not null default false;
