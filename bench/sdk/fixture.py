"""The SDK servers' world for bench/sdk.sh: a SQLite database shaped like
Coop's (farm, house, five flocks, a member, an active grant and a revoked
one), an ES256 key pair whose public half is written as a JWKS, and access
tokens minted with it.

    fixture.py DIR ISSUER AUDIENCE

writes DIR/sdk.db and DIR/jwks.json and prints one JSON object: "good" (a
token both SDK servers must accept) and "refused" (name -> token each of
them must answer 401: a signature by another key under the same kid, an
expired token, another audience, and a valid token of a revoked grant, which
only the per-call SQLite look-up can catch). The claims are Coop's own set
(iss, sub, aud, client_id, scope, iat, exp, jti, grant_id, epoch) so the
tokens are the same size and shape as Coop's.
"""

import json
import sqlite3
import sys
import time
import uuid
from pathlib import Path

import jwt
from cryptography.hazmat.primitives.asymmetric import ec

SCHEMA = """
create table farms (
    id text primary key,
    name text not null,
    suspended integer not null default 0,
    connected_apps_enabled integer not null default 1
);
create table users (
    id text primary key,
    email text not null unique,
    credential_epoch integer not null default 0,
    disabled integer not null default 0,
    must_change_password integer not null default 0
);
create table memberships (
    user_id text not null references users (id),
    farm_id text not null references farms (id),
    role text not null,
    flock_restricted integer not null default 0,
    primary key (user_id, farm_id)
);
create table membership_flocks (
    user_id text not null,
    flock_id text not null,
    primary key (user_id, flock_id)
);
create table grants (
    id text primary key,
    farm_id text not null references farms (id),
    user_id text not null references users (id),
    client_id text not null,
    scope text not null,
    revoked_at integer,
    last_used_at integer
);
create table revoked_access_tokens (
    jti text primary key,
    revoked_at integer not null
);
create table houses (
    id text primary key,
    farm_id text not null references farms (id),
    name text not null
);
create table flocks (
    id text primary key,
    farm_id text not null references farms (id),
    house_id text not null references houses (id),
    name text not null,
    breed text not null,
    placed_on text not null,
    head_count integer not null,
    status text not null
);
create index flocks_by_farm_name on flocks (farm_id, name, id);
"""

CLIENT_ID = "sdk-bench-client"


def jwk(private_key, kid):
    public = jwt.algorithms.ECAlgorithm.to_jwk(private_key.public_key(), as_dict=True)
    return {**public, "kid": kid, "alg": "ES256", "use": "sig"}


def main():
    out, issuer, audience = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    db = sqlite3.connect(out / "sdk.db")
    db.execute("pragma journal_mode = wal")
    db.executescript(SCHEMA)
    farm, house, user = str(uuid.uuid4()), str(uuid.uuid4()), str(uuid.uuid4())
    grant, revoked_grant = str(uuid.uuid4()), str(uuid.uuid4())
    db.execute("insert into farms (id, name) values (?, 'Bench Farm')", (farm,))
    db.execute("insert into houses (id, farm_id, name) values (?, ?, 'House 1')", (house, farm))
    for n in range(1, 6):
        db.execute(
            "insert into flocks values (?, ?, ?, ?, 'ISA Brown', '2026-01-15', 1200, 'active')",
            (str(uuid.uuid4()), farm, house, f"Flock {n}"),
        )
    db.execute("insert into users (id, email) values (?, 'owner@bench.example')", (user,))
    db.execute("insert into memberships (user_id, farm_id, role) values (?, ?, 'owner')", (user, farm))
    now = int(time.time())
    db.execute(
        "insert into grants (id, farm_id, user_id, client_id, scope) values (?, ?, ?, ?, 'farm:read')",
        (grant, farm, user, CLIENT_ID),
    )
    db.execute(
        "insert into grants (id, farm_id, user_id, client_id, scope, revoked_at)"
        " values (?, ?, ?, ?, 'farm:read', ?)",
        (revoked_grant, farm, user, CLIENT_ID, now),
    )
    db.commit()
    db.close()

    kid = "sdk-bench-1"
    key = ec.generate_private_key(ec.SECP256R1())
    other = ec.generate_private_key(ec.SECP256R1())
    (out / "jwks.json").write_text(json.dumps({"keys": [jwk(key, kid)]}))

    def mint(signer=key, grant_id=grant, aud=audience, exp=now + 3600):
        claims = {
            "iss": issuer,
            "sub": user,
            "aud": aud,
            "client_id": CLIENT_ID,
            "scope": "farm:read",
            "iat": now,
            "exp": exp,
            "jti": str(uuid.uuid4()),
            "grant_id": grant_id,
            "epoch": 0,
        }
        return jwt.encode(claims, signer, algorithm="ES256", headers={"kid": kid, "typ": "at+jwt"})

    print(
        json.dumps(
            {
                "good": mint(),
                "refused": {
                    "another key": mint(signer=other),
                    "expired": mint(exp=now - 120),
                    "another audience": mint(aud=issuer + "/other"),
                    "revoked grant": mint(grant_id=revoked_grant),
                },
            }
        )
    )


if __name__ == "__main__":
    main()
