-- The last good copy of each client metadata document and key set (issue 31 item 10). (PostgreSQL twin of
-- sqlite/0013.)
--
-- * While a document's or key set's host is down (no answer, a timeout, a 5xx), the fetcher serves the copy
--   kept here for a grace period (`--cimd-stale-grace`), on every replica and after a restart. Only what a
--   known client relies on is kept (storage/last_good_copies.rs), so the table is as large as the clients
--   and automations that name a document or key set. Housekeeping deletes copies older than the grace.
-- * `body` is the response body as fetched: it passed validation, and is validated again before it is
--   served.
-- * `oauth_clients.jwks_uri`: where a client's keys are, when they are behind a URL, so a key set can be told
--   to belong to a known client. Document clients get it when their row is written; registered ones from
--   their metadata, here and at registration.

create table last_good_copies (
    kind       text not null check (kind in ('document', 'key_set')),
    url        text not null,
    body       text not null,
    fetched_at bigint not null,
    primary key (kind, url)
);
create index last_good_copies_fetched on last_good_copies (fetched_at);

alter table oauth_clients add column jwks_uri text;
update oauth_clients set jwks_uri = metadata::jsonb ->> 'jwks_uri'
    where kind in ('registered', 'dynamic');
create index oauth_clients_jwks_uri on oauth_clients (jwks_uri) where jwks_uri is not null;
create index automations_jwks_uri on automations (jwks_uri) where jwks_uri is not null;
