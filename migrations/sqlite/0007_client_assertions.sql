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

-- A client may be registered for private_key_jwt. SQLite cannot alter a check constraint, so the table is rebuilt
-- (the "12 steps" of SQLite's ALTER TABLE documentation): migrations run with foreign keys off (see
-- storage::engine::connect_sqlite), so dropping the old table cascades to nothing, and the grants' references, which
-- name the table, name the new one once it is renamed.
create table oauth_clients_new (
    client_id                  text primary key,
    -- registered: from the command line; dynamic: RFC 7591 /register;
    -- metadata_document: a fetched Client ID Metadata Document (cached copy).
    kind                       text not null check (kind in ('registered', 'dynamic', 'metadata_document')),
    client_name                text not null,
    -- JSON array of exact redirect URIs.
    redirect_uris              text not null,
    token_endpoint_auth_method text not null check (token_endpoint_auth_method in ('none', 'client_secret_basic', 'client_secret_post', 'private_key_jwt')),
    secret_hash                text,
    -- The registration as the client sent it (unknown fields dropped), JSON; a private_key_jwt client's keys
    -- (jwks or jwks_uri) and token_endpoint_auth_signing_alg are here.
    metadata                   text not null default '{}',
    created_at                 integer not null,
    -- Dynamic registrations never used within 24 h expire.
    last_used_at               integer,
    -- Metadata documents: when the cached copy must be fetched again.
    cache_expires_at           integer
);
insert into oauth_clients_new (client_id, kind, client_name, redirect_uris, token_endpoint_auth_method, secret_hash,
                               metadata, created_at, last_used_at, cache_expires_at)
    select client_id, kind, client_name, redirect_uris, token_endpoint_auth_method, secret_hash,
           metadata, created_at, last_used_at, cache_expires_at
    from oauth_clients;
drop table oauth_clients;
alter table oauth_clients_new rename to oauth_clients;
create index oauth_clients_unused on oauth_clients (created_at) where kind = 'dynamic' and last_used_at is null;
