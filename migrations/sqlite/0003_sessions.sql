-- Browser sessions move from tower-sessions' own table (created by the library, keyed by the cookie value
-- itself) to this one, keyed by the SHA-256 of the session id: a copy of the database yields no usable
-- cookie (threat 28). Sessions of the old table are not carried over; everyone signs in once more.
-- (SQLite twin of postgres/0003.)

drop table if exists tower_sessions;

create table sessions (
    -- Lower-case hex SHA-256 of the id in the cookie.
    id_hash    text primary key,
    -- The session's key-value map, JSON.
    data       text not null,
    expires_at integer not null
);
create index sessions_expiry on sessions (expires_at);
