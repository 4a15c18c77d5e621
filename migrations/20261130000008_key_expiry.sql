-- API keys may expire: past `expires_at` the gateway refuses the key, saying so.
alter table api_key add column expires_at timestamptz;
