-- Password reset links (issue 34 item 1). (SQLite twin of postgres/0014.)
--
-- * A link is made by the farm's owner (members page) or the operator (`coop admin user password-reset`) and
--   handed to the person; following it, they choose a new password. The link's token leaves Coop once and is
--   stored only as its SHA-256 hash (`token_hash`), like refresh tokens.
-- * Valid 24 hours (`expires_at`), used once (`used_at`), and only the newest of a person's links works: a new
--   one marks the older ones `replaced_at`. Rows are kept a while after they end, so a used, expired or
--   replaced link gets a page saying which; housekeeping deletes them 30 days after they expire.
-- * `credential_epoch`: the person's epoch when the link was made. A link works only while the epoch is
--   unchanged, so a password change, a sign-out-everywhere or another reset voids every older link.
-- * `farm_id`: the farm whose owner (or the operator, for whose member) made it, for the audit row.

create table password_resets (
    token_hash       text primary key,
    user_id          blob not null references users (id) on delete cascade,
    farm_id          blob not null references farms (id) on delete cascade,
    credential_epoch integer not null,
    created_at       integer not null,
    expires_at       integer not null,
    used_at          integer,
    replaced_at      integer
);
create index password_resets_user on password_resets (user_id);
create index password_resets_expiry on password_resets (expires_at);
