-- Authorization requests waiting for the person's answer (SQLite twin of
-- postgres/0004).
--
-- * A request that needs the consent screen or the password again waits
--   here, not in the browser session: two submits of one consent form (a
--   double click, two replicas) both read a session, but only one of them
--   can set `answered_at` in the conditional update that decides the
--   request, so one decision issues one code.
-- * The consent form names the request by a random id; only its SHA-256 is
--   stored, like every other secret.
-- * `reauthenticated_at`: when the password was entered again for this very
--   request (`prompt=login`, `max_age`), so the person is asked once, not in
--   a loop.
-- * Rows live for half an hour (`expires_at`); housekeeping deletes them.

create table pending_authorizations (
    id_hash            text primary key,
    user_id            blob not null references users (id) on delete cascade,
    -- The checked authorization request, JSON.
    request            text not null,
    created_at         integer not null,
    expires_at         integer not null,
    reauthenticated_at integer,
    -- Set once, by the one answer that wins.
    answered_at        integer,
    decision           text check (decision in ('approve', 'deny'))
);
create index pending_authorizations_user on pending_authorizations (user_id, created_at);
create index pending_authorizations_expiry on pending_authorizations (expires_at);
