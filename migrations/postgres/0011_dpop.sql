-- DPoP (RFC 9449, issue 12): proofs seen (so none is accepted twice on any replica), and the key a public
-- client's refresh token is bound to; server nonces are keyed from server_secrets (0005).

-- The RFC 7638 thumbprint of the key the token is bound to; null: not bound.
alter table refresh_tokens add column dpop_jkt text;

-- One row per accepted proof: SHA-256 of its key thumbprint and jti, kept until the proof is too old anyway.
create table dpop_proofs (
    proof_hash text primary key,
    expires_at bigint not null
);
create index dpop_proofs_expiry on dpop_proofs (expires_at);

