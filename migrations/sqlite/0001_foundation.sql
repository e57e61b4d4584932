-- Coop's first schema (SQLite twin of postgres/0001): the farm domain, users and memberships, the audit log,
-- and the authorization server's tables.
--
-- House rules (they hold for the sqlite twin of this file too):
-- * A released migration is never edited; changes come as a new file with the
--   next number, in both folders.
-- * Every instant is a integer of Unix seconds (UTC). SQLite has no instant
--   type, and comparing integers is exact on both engines.
-- * Calendar dates (a flock's placement, a day's entry) are `date` here and
--   ISO `YYYY-MM-DD` text on SQLite, which sorts the same way.
-- * Every row that belongs to a farm carries `farm_id`, and every index that
--   serves a farm's reads starts with it.
-- * Secrets (codes, refresh tokens, client secrets) are stored only as hashes.

create table farms (
    id                     blob primary key,
    slug                   text not null unique,
    name                   text not null,
    -- A suspended farm's members cannot use connected apps or sign in to act.
    suspended              boolean not null default false,
    -- The owner's switch: off refuses every MCP call for the farm at once.
    connected_apps_enabled boolean not null default true,
    created_at             integer not null
);

create table users (
    id                   blob primary key,
    -- Lower-cased; one account per address across the whole server.
    email                text not null unique,
    -- argon2id PHC string.
    password_hash        text not null,
    -- Moves on password change, "sign out everywhere", and similar: every
    -- browser session and access token records the epoch it was made under
    -- and dies when it no longer matches.
    credential_epoch     integer not null default 0,
    disabled             boolean not null default false,
    must_change_password boolean not null default false,
    created_at           integer not null,
    updated_at           integer not null
);

-- A user belongs to exactly one farm, with one role.
create table memberships (
    user_id          blob primary key references users (id) on delete cascade,
    farm_id          blob not null references farms (id) on delete cascade,
    role             text not null check (role in ('owner', 'manager', 'worker', 'viewer')),
    -- true: the member sees only the flocks listed in membership_flocks
    -- (possibly none). false: the whole farm. Never inferred from an empty list.
    flock_restricted boolean not null default false,
    created_at       integer not null
);
create index memberships_farm on memberships (farm_id);

create table houses (
    id         blob primary key,
    farm_id    blob not null references farms (id) on delete cascade,
    name       text not null,
    created_at integer not null,
    constraint houses_farm_name_key unique (farm_id, name)
);

create table flocks (
    id         blob primary key,
    farm_id    blob not null references farms (id) on delete cascade,
    house_id   blob not null references houses (id) on delete cascade,
    -- Unique within a house only: two houses may each have a "Flock A", and a
    -- tool addressed by name must then ask which one.
    name       text not null,
    breed      text not null,
    placed_on  text not null,
    head_count integer not null check (head_count >= 0),
    status     text not null default 'active' check (status in ('active', 'depleted')),
    created_at integer not null,
    constraint flocks_house_name_key unique (house_id, name)
);
create index flocks_farm_name on flocks (farm_id, name);

create table membership_flocks (
    user_id  blob not null references memberships (user_id) on delete cascade,
    flock_id blob not null references flocks (id) on delete cascade,
    primary key (user_id, flock_id)
);

create table daily_entries (
    id             blob primary key,
    farm_id        blob not null references farms (id) on delete cascade,
    house_id       blob not null references houses (id) on delete cascade,
    flock_id       blob not null references flocks (id) on delete cascade,
    entry_date     text not null,
    eggs_collected integer not null check (eggs_collected >= 0),
    eggs_cracked   integer not null default 0 check (eggs_cracked >= 0),
    mortality      integer not null default 0 check (mortality >= 0),
    feed_used_g    integer not null default 0 check (feed_used_g >= 0),
    water_used_ml  integer not null default 0 check (water_used_ml >= 0),
    notes          text not null default '',
    -- Starts at 1, +1 on every change: the optimistic-concurrency token.
    version        integer not null default 1,
    recorded_by    blob references users (id) on delete set null,
    created_at     integer not null,
    updated_at     integer not null,
    constraint daily_entries_flock_date_key unique (flock_id, entry_date)
);
create index daily_entries_farm_date on daily_entries (farm_id, entry_date);

create table egg_lots (
    id         blob primary key,
    farm_id    blob not null references farms (id) on delete cascade,
    flock_id   blob not null references flocks (id) on delete cascade,
    lot_code   text not null,
    laid_on    text not null,
    grade      text not null,
    quantity   integer not null check (quantity >= 0),
    status     text not null default 'in_store' check (status in ('in_store', 'shipped', 'discarded')),
    created_at integer not null,
    constraint egg_lots_farm_code_key unique (farm_id, lot_code)
);
create index egg_lots_farm_date on egg_lots (farm_id, laid_on);

create table stock_items (
    id              blob primary key,
    farm_id         blob not null references farms (id) on delete cascade,
    category        text not null check (category in ('feed', 'medication', 'packaging', 'other')),
    name            text not null,
    quantity        integer not null check (quantity >= 0),
    unit            text not null,
    -- Money is integer minor units plus an ISO 4217 code, never a float.
    unit_cost_minor integer not null check (unit_cost_minor >= 0),
    currency        text not null check (length(currency) = 3),
    updated_at      integer not null,
    constraint stock_items_farm_name_key unique (farm_id, name)
);

create table audit_log (
    id         blob primary key,
    -- Null for server-wide events (an unknown email's failed sign-in).
    farm_id    blob references farms (id) on delete cascade,
    user_id    blob references users (id) on delete set null,
    client_id  text,
    grant_id   blob,
    kind       text not null,
    -- A short JSON object; never a secret.
    detail     text not null default '{}',
    created_at integer not null
);
create index audit_log_farm_time on audit_log (farm_id, created_at);

-- ---------------------------------------------------------------------------
-- The authorization server.

create table oauth_clients (
    client_id                  text primary key,
    -- registered: from the command line; dynamic: RFC 7591 /register;
    -- metadata_document: a fetched Client ID Metadata Document (cached copy).
    kind                       text not null check (kind in ('registered', 'dynamic', 'metadata_document')),
    client_name                text not null,
    -- JSON array of exact redirect URIs.
    redirect_uris              text not null,
    token_endpoint_auth_method text not null check (token_endpoint_auth_method in ('none', 'client_secret_basic', 'client_secret_post')),
    secret_hash                text,
    -- The registration as the client sent it (unknown fields dropped), JSON.
    metadata                   text not null default '{}',
    created_at                 integer not null,
    -- Dynamic registrations never used within 24 h expire.
    last_used_at               integer,
    -- Metadata documents: when the cached copy must be fetched again.
    cache_expires_at           integer
);

-- One per (user, client) while active: the unit a person sees as a
-- "connected app" and disconnects. Every code, refresh token and access
-- token names the grant it came from.
create table grants (
    id             blob primary key,
    farm_id        blob not null references farms (id) on delete cascade,
    user_id        blob not null references users (id) on delete cascade,
    client_id      text not null references oauth_clients (client_id) on delete cascade,
    scope          text not null,
    resource       text not null,
    -- The user's credential epoch at consent: once it moves, the grant's
    -- refresh tokens are refused and the person must approve again.
    credential_epoch integer not null,
    created_at     integer not null,
    last_used_at   integer,
    revoked_at     integer,
    revoked_reason text
);
create unique index grants_active_user_client on grants (user_id, client_id) where revoked_at is null;
create index grants_farm on grants (farm_id) where revoked_at is null;

create table authorization_codes (
    code_hash      text primary key,
    grant_id       blob not null references grants (id) on delete cascade,
    client_id      text not null,
    user_id        blob not null,
    redirect_uri   text not null,
    code_challenge text not null,
    resource       text not null,
    scope          text not null,
    -- The credential epoch when consent was given.
    credential_epoch integer not null,
    expires_at     integer not null,
    consumed_at    integer,
    created_at     integer not null
);
create index authorization_codes_grant on authorization_codes (grant_id);

create table refresh_tokens (
    token_hash  text primary key,
    grant_id    blob not null references grants (id) on delete cascade,
    expires_at  integer not null,
    -- Set once, by the one conditional update that rotates the token.
    used_at     integer,
    created_at  integer not null
);
create index refresh_tokens_grant on refresh_tokens (grant_id);

-- Access tokens revoked on their own (RFC 7009) before they expire.
create table revoked_access_tokens (
    jti        text primary key,
    grant_id   blob not null,
    expires_at integer not null
);

create table signing_keys (
    kid            text primary key,
    algorithm      text not null check (algorithm in ('ES256')),
    -- PKCS#8 DER. The one secret kept in clear: protect the database (see
    -- docs/security.md).
    private_pkcs8  blob not null,
    -- The public JWK, as served from /jwks.json.
    public_jwk     text not null,
    created_at     integer not null,
    -- Exactly one active key signs; retired keys verify until
    -- retired_at + the access-token lifetime.
    active         boolean not null,
    retired_at     integer
);
create unique index signing_keys_one_active on signing_keys (active) where active;
