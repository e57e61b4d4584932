-- Sign-in throttling in the shared store (issue 11): failed sign-ins are counted here, so N replicas allow one
-- budget, not N. And the master secret signed cookies are keyed from (the device cookie that lets a browser
-- which signed in before be judged by its own failures; the CSRF token of a signed-out form), the same on every
-- replica. (SQLite twin of postgres/0005.)

create table signin_failures (
    -- Lower-case hex SHA-256 of what is counted: an account (the email as typed), a network (an IPv4 address or
    -- an IPv6 /64) or a device (the id in its cookie). Hashed: a typed "email" is sometimes a password.
    bucket      text primary key,
    -- When every failure counted here is forgotten, Unix milliseconds: each failure moves it one refill interval
    -- past max(itself, now). A row whose instant has passed counts nothing and is deleted by housekeeping.
    clear_at_ms integer not null
);
create index signin_failures_clear_at on signin_failures (clear_at_ms);

create table server_secrets (
    name       text primary key,
    -- base64url random bytes, made by the first server to start.
    value      text not null,
    created_at integer not null
);
