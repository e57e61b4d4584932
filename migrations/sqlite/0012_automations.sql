-- Automations and introspection (issue 12). (SQLite twin of postgres/0012.)
--
-- * An automation is a machine client a farm owner controls: a barn scale or
--   a farm-management system that gets its own access tokens with the
--   client credentials grant. It is not a person and not an OAuth client of
--   `oauth_clients`: it holds a role (never owner, checked here too) and,
--   for a worker, a flock list, like a membership, and its tokens name it as
--   their subject. It presents `automation-<id>` as its `client_id`. The
--   per-call check of `/mcp` reads this row on every call.
-- * Its credential is a client secret (stored only as its SHA-256, like
--   every secret) or a public key set for `private_key_jwt`.
-- * `credential_epoch` moves when the automation is disabled or its secret
--   changes: tokens made before stay dead even once it is enabled again.
-- * An audit row of an automation's write names it in `automation_id` (no
--   foreign key: the row outlives a deleted automation; its name is in the
--   detail).
-- * `oauth_clients.introspection`: a confidential client registered with
--   `coop admin client add --introspection` may call `/introspect`.

create table automations (
    id               blob primary key,
    farm_id          blob not null references farms (id) on delete cascade,
    name             text not null,
    role             text not null check (role in ('manager', 'worker', 'viewer')),
    -- As for a membership: true, only the flocks in automation_flocks.
    flock_restricted boolean not null default false,
    -- The scopes it may hold, space-separated.
    scope            text not null,
    auth_method      text not null check (auth_method in ('client_secret_basic', 'private_key_jwt')),
    secret_hash      text,
    -- private_key_jwt: a pasted key set (JWKS JSON), or where to fetch one.
    jwks             text,
    jwks_uri         text,
    credential_epoch integer not null default 0,
    disabled         boolean not null default false,
    created_by       blob references users (id) on delete set null,
    created_at       integer not null,
    last_used_at     integer,
    constraint automations_farm_name_key unique (farm_id, name)
);
create index automations_farm on automations (farm_id);

create table automation_flocks (
    automation_id blob not null references automations (id) on delete cascade,
    flock_id      blob not null references flocks (id) on delete cascade,
    primary key (automation_id, flock_id)
);

alter table audit_log add column automation_id blob;

-- A daily entry an automation wrote names it (a person's names them in
-- recorded_by).
alter table daily_entries add column recorded_by_automation blob references automations (id) on delete set null;

alter table oauth_clients add column introspection boolean not null default false;
