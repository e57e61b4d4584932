-- Client assertions (private_key_jwt, RFC 7523; issue 11): an assertion's jti is single use until the assertion
-- expires. Each accepted jti is kept here, as a SHA-256 hash, until then, so a second presentation is refused on
-- every replica: the primary key makes the insert of a replayed jti change nothing. (SQLite twin of postgres/0007.)
create table client_assertion_jtis (
    client_id text not null,
    jti_hash text not null,
    expires_at integer not null,
    primary key (client_id, jti_hash)
);

-- Housekeeping deletes expired rows with an index range scan.
create index client_assertion_jtis_expiry on client_assertion_jtis (expires_at);
