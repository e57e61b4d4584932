-- The authorization server's additions (SQLite twin of postgres/0002).
--
-- * A refresh token carries the scopes it may mint, so a grant whose scopes
--   are narrowed at a later consent narrows every older token with it
--   (what a refresh mints is the token's scope ∩ the grant's scope).
-- * Housekeeping deletes what can no longer be used; these indexes keep
--   each sweep an index range scan.

alter table refresh_tokens add column scope text not null default '';

create index refresh_tokens_expiry on refresh_tokens (expires_at);
create index authorization_codes_expiry on authorization_codes (expires_at);
create index revoked_access_tokens_expiry on revoked_access_tokens (expires_at);
create index oauth_clients_unused on oauth_clients (created_at) where kind = 'dynamic' and last_used_at is null;
