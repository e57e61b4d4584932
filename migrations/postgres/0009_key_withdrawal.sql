-- A compromised signing key can be withdrawn at once (`coop keys retire KID --now`, issue 13): it leaves
-- /jwks.json and verification, and every replica refuses its tokens on their next call, because the per-call
-- store check reads this column.

-- Set when the key was withdrawn; a withdrawn key never verifies again.
alter table signing_keys add column withdrawn_at bigint;
