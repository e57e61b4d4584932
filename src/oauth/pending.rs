//! Authorization requests waiting for the person (the consent screen, the
//! password asked again), and the single answer each gets.
//!
//! A request that needs the person is stored in the shared store under a
//! random 256-bit id, which the consent and password forms carry; two tabs
//! connecting two apps each answer their own request. A request belongs to
//! the person who opened it, lives [`PENDING_TTL`], and at most
//! [`MAX_PENDING_PER_USER`] wait per person.
//!
//! **One decision, one code.** Answering is a claim on the row
//! ([`claim`]) in the transaction that carries the answer out, won by
//! exactly one submit even when two arrive at once, on one replica or two. The code an approval issues is derived from the
//! request's id ([`code_for`]): the losing submit, which carries the same
//! id, can send the browser the very same redirect while the code is
//! unspent, so a double click still lands the code with the client, and
//! nothing but hashes is stored (the id and the code exist only in the
//! person's browser and the client).

use time::OffsetDateTime;

use crate::domain::UserId;
use crate::oauth::authorize::AuthorizationRequest;
use crate::secrets::{self, AuthorizationCode};
use crate::storage::pending_authorizations::{self as stored, NewPending};
use crate::storage::{Store, StoreError, Tx};

/// How long a request may wait for its answer.
pub const PENDING_TTL: time::Duration = time::Duration::minutes(30);

/// How many requests may wait per person; a new one pushes out the oldest.
pub const MAX_PENDING_PER_USER: u32 = 16;

/// What the person decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    Approve,
    Deny,
}

impl Decision {
    fn as_str(self) -> &'static str {
        match self {
            Self::Approve => "approve",
            Self::Deny => "deny",
        }
    }

    fn parse(raw: &str) -> Option<Self> {
        match raw {
            "approve" => Some(Self::Approve),
            "deny" => Some(Self::Deny),
            _ => None,
        }
    }
}

/// A waiting (or answered) request.
#[derive(Clone, Debug)]
pub struct Pending {
    /// The id the forms carry (never stored: only its hash is).
    pub id: String,
    pub request: AuthorizationRequest,
    /// The password was entered again for this very request.
    pub reauthenticated: bool,
    /// Set once the request has been answered.
    pub answered: Option<Decision>,
}

fn id_hash(id: &str) -> String {
    secrets::hash_secret(id)
}

/// Stores `request` for `user`; returns its id.
pub async fn put(
    store: &Store,
    user: UserId,
    request: &AuthorizationRequest,
    now: OffsetDateTime,
) -> Result<String, StoreError> {
    let id = secrets::random_token(32);
    let json = serde_json::to_string(request).map_err(StoreError::backend)?;
    let mut tx = store.write().await?;
    stored::insert(
        &mut tx,
        &NewPending {
            id_hash: &id_hash(&id),
            user,
            request: &json,
            expires_at: now + PENDING_TTL,
        },
        MAX_PENDING_PER_USER,
        now,
    )
    .await?;
    tx.commit().await?;
    Ok(id)
}

/// The request `id` of `user`, unless unknown, another person's, expired
/// or unreadable.
pub async fn get(
    store: &Store,
    id: &str,
    user: UserId,
    now: OffsetDateTime,
) -> Result<Option<Pending>, StoreError> {
    if id.is_empty() {
        return Ok(None);
    }
    let Some(row) = stored::find(&mut store.read().await?, &id_hash(id), user, now).await? else {
        return Ok(None);
    };
    let request = match serde_json::from_str::<AuthorizationRequest>(&row.request) {
        Ok(request) => request,
        Err(err) => {
            tracing::error!(error = %err, "a waiting authorization request is unreadable");
            return Ok(None);
        }
    };
    Ok(Some(Pending {
        id: id.to_owned(),
        request,
        reauthenticated: row.reauthenticated_at.is_some(),
        answered: row
            .answered_at
            .and(row.decision.as_deref().and_then(Decision::parse)),
    }))
}

/// Records that the password was just entered again for request `id`.
pub async fn reauthenticated(
    store: &Store,
    id: &str,
    user: UserId,
    now: OffsetDateTime,
) -> Result<(), StoreError> {
    let mut tx = store.write().await?;
    stored::mark_reauthenticated(&mut tx, &id_hash(id), user, now).await?;
    tx.commit().await
}

/// Answers request `id` in `tx`: `true` for the one caller whose answer
/// counts, which then carries it out in the same transaction. `false`:
/// another answer won (and has committed: the claim waited for it).
pub async fn claim(
    tx: &mut Tx,
    id: &str,
    user: UserId,
    decision: Decision,
    now: OffsetDateTime,
) -> Result<bool, StoreError> {
    stored::claim(tx, &id_hash(id), user, decision.as_str(), now).await
}

/// The one code an approval of request `id` issues: HMAC-SHA256 keyed by
/// the id's 256 random bits. Whoever holds the id (the person's browser)
/// can compute it, and no one else; the store keeps its hash like any
/// other code's.
pub fn code_for(id: &str) -> AuthorizationCode {
    use aws_lc_rs::hmac;
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let key = hmac::Key::new(hmac::HMAC_SHA256, id.as_bytes());
    let tag = hmac::sign(&key, b"coop authorization code v1");
    AuthorizationCode::new(URL_SAFE_NO_PAD.encode(tag.as_ref()))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::domain::{Email, Role};
    use crate::oauth::approval::tests::request;
    use crate::storage::users::{self, NewMember};
    use crate::testing::TestStore;

    #[test]
    fn one_request_has_one_code_and_two_requests_two() {
        let a = secrets::random_token(32);
        let b = secrets::random_token(32);
        assert_eq!(code_for(&a), code_for(&a));
        assert_ne!(code_for(&a), code_for(&b));
        // As long as a random code: 256 bits, base64url.
        assert_eq!(code_for(&a).expose().len(), 43);
        assert_ne!(code_for(&a).expose(), a);
    }

    #[test]
    fn decisions_round_trip() {
        for d in [Decision::Approve, Decision::Deny] {
            assert_eq!(Decision::parse(d.as_str()), Some(d));
        }
        assert_eq!(Decision::parse("maybe"), None);
    }

    /// A person on a fresh store, who can have requests waiting (shared
    /// with the consent flow's tests).
    pub(crate) async fn person() -> (TestStore, UserId, OffsetDateTime) {
        let db = TestStore::sqlite().await;
        let now = OffsetDateTime::from_unix_timestamp(OffsetDateTime::now_utc().unix_timestamp())
            .unwrap();
        let slug = crate::admin::add_farm(&db.store, "Hillside", None, now)
            .await
            .unwrap();
        let farm = crate::admin::farm(&db.store, &slug)
            .await
            .unwrap()
            .farm_id();
        let email = Email::parse("pat@hillside.example").unwrap();
        let member = NewMember {
            farm,
            email: &email,
            password_hash: "not-a-hash",
            role: Role::Worker,
            flocks: None,
            must_change_password: false,
        };
        let mut tx = db.store.write().await.unwrap();
        let user = users::create_member(&mut tx, &member, now).await.unwrap();
        tx.commit().await.unwrap();
        (db, user, now)
    }

    async fn answer(db: &TestStore, id: &str, user: UserId, decision: Decision) -> bool {
        let now = OffsetDateTime::now_utc();
        let mut tx = db.store.write().await.unwrap();
        let won = claim(&mut tx, id, user, decision, now).await.unwrap();
        tx.commit().await.unwrap();
        won
    }

    #[tokio::test]
    async fn a_waiting_request_is_found_by_its_id_for_its_person_while_it_lives() {
        let (db, user, now) = person().await;
        let asked = request("farm:read");
        let id = put(&db.store, user, &asked, now).await.unwrap();
        assert_eq!(id.len(), 43, "256 random bits, base64url");
        let other = put(&db.store, user, &request("daily-entries:write"), now)
            .await
            .unwrap();
        assert_ne!(id, other);

        let found = get(&db.store, &id, user, now).await.unwrap().unwrap();
        assert_eq!((found.id.as_str(), &found.request), (id.as_str(), &asked));
        assert!(!found.reauthenticated);
        assert_eq!(found.answered, None);
        let last_moment = now + PENDING_TTL - time::Duration::seconds(1);
        assert!(
            get(&db.store, &id, user, last_moment)
                .await
                .unwrap()
                .is_some()
        );

        let stranger = UserId::new();
        for (id, user, at) in [
            (id.as_str(), user, now + PENDING_TTL),
            ("", user, now),
            ("not-an-id", user, now),
            (id.as_str(), stranger, now),
        ] {
            let found = get(&db.store, id, user, at).await.unwrap();
            assert!(found.is_none(), "{id:?} at {at}");
        }
    }

    #[tokio::test]
    async fn the_password_asked_again_marks_that_request_alone() {
        let (db, user, now) = person().await;
        let id = put(&db.store, user, &request("farm:read"), now)
            .await
            .unwrap();
        let other = put(&db.store, user, &request("farm:read"), now)
            .await
            .unwrap();
        reauthenticated(&db.store, &id, UserId::new(), now)
            .await
            .unwrap();
        assert!(
            !get(&db.store, &id, user, now)
                .await
                .unwrap()
                .unwrap()
                .reauthenticated
        );
        reauthenticated(&db.store, &id, user, now).await.unwrap();
        assert!(
            get(&db.store, &id, user, now)
                .await
                .unwrap()
                .unwrap()
                .reauthenticated
        );
        assert!(
            !get(&db.store, &other, user, now)
                .await
                .unwrap()
                .unwrap()
                .reauthenticated
        );
    }

    #[tokio::test]
    async fn the_first_answer_wins_and_is_the_one_read_back() {
        let (db, user, now) = person().await;
        for decision in [Decision::Approve, Decision::Deny] {
            let id = put(&db.store, user, &request("farm:read"), now)
                .await
                .unwrap();
            assert!(
                !answer(&db, &id, UserId::new(), decision).await,
                "a stranger answered"
            );
            assert!(answer(&db, &id, user, decision).await);
            assert!(!answer(&db, &id, user, Decision::Approve).await);
            assert!(!answer(&db, &id, user, Decision::Deny).await);
            let found = get(&db.store, &id, user, now).await.unwrap().unwrap();
            assert_eq!(found.answered, Some(decision));
        }
    }

    #[tokio::test]
    async fn a_new_request_past_the_limit_pushes_out_the_oldest() {
        let (db, user, now) = person().await;
        let mut ids = Vec::new();
        for n in 0..=MAX_PENDING_PER_USER {
            let at = now + time::Duration::seconds(n.into());
            ids.push(
                put(&db.store, user, &request("farm:read"), at)
                    .await
                    .unwrap(),
            );
        }
        assert!(get(&db.store, &ids[0], user, now).await.unwrap().is_none());
        for id in &ids[1..] {
            assert!(get(&db.store, id, user, now).await.unwrap().is_some());
        }
    }
}
