-- The refresh-token reuse window (issue 11): a just-rotated refresh token presented again within the window,
-- while its successor is unused, gets that same successor back. The successor is derived from the presented
-- token and this per-rotation random nonce (HMAC), so it is never stored, only recomputed by whoever holds the
-- spent token. (SQLite twin of postgres/0008.)

-- Set when the token is spent: the nonce its successor was derived with.
alter table refresh_tokens add column successor_nonce text;
-- The last time this (unused) token was handed out again to a retried refresh.
alter table refresh_tokens add column reissued_at integer;
