-- Client assertions (private_key_jwt, RFC 7523; issue 11): an assertion's jti is single use until the assertion
-- expires. Each accepted jti is kept here, as a SHA-256 hash, until then, so a second presentation is refused on
-- every replica: the primary key makes the insert of a replayed jti change nothing.
create table client_assertion_jtis (
    client_id text not null,
    jti_hash text not null,
    expires_at bigint not null,
    primary key (client_id, jti_hash)
);

-- Housekeeping deletes expired rows with an index range scan.
create index client_assertion_jtis_expiry on client_assertion_jtis (expires_at);

-- A client may be registered for private_key_jwt; its keys (jwks or jwks_uri) and token_endpoint_auth_signing_alg
-- are kept in its metadata.
alter table oauth_clients drop constraint oauth_clients_token_endpoint_auth_method_check;
alter table oauth_clients add constraint oauth_clients_token_endpoint_auth_method_check
    check (token_endpoint_auth_method in ('none', 'client_secret_basic', 'client_secret_post', 'private_key_jwt'));
