//! Active grants as people see them: "connected apps", with the client's
//! name and kind and the member who approved each.
//!
//! Reads only; ending a grant is [`super::grants::revoke`].

use uuid::Uuid;

use super::{Exec, Sql, StoreError};
use crate::domain::{ClientKind, FarmId, FarmSlug, GrantId, ScopeSet, UserId};

crate::record! {
    /// One active grant with what a page or the command line shows about it.
    #[derive(Clone, Debug)]
    pub struct ConnectedApp {
        pub grant_id: Uuid,
        pub farm_id: Uuid,
        pub farm_slug: FarmSlug,
        pub user_id: Uuid,
        pub email: String,
        pub client_id: String,
        pub client_name: String,
        pub client_kind: ClientKind,
        pub scope: ScopeSet,
        pub created_at: i64,
        pub last_used_at: Option<i64>,
    }
}

impl ConnectedApp {
    pub fn grant(&self) -> GrantId {
        GrantId(self.grant_id)
    }

    pub fn farm(&self) -> FarmId {
        FarmId(self.farm_id)
    }

    pub fn user(&self) -> UserId {
        UserId(self.user_id)
    }
}

/// Which active grants to list; every filter given must hold.
#[derive(Clone, Copy, Debug, Default)]
pub struct AppFilter<'a> {
    pub farm: Option<FarmId>,
    pub user: Option<UserId>,
    pub email: Option<&'a str>,
    pub grant: Option<GrantId>,
}

/// A list is bounded: a person or farm with more active grants than this
/// is not a case a page must render in one go.
const MAX_LISTED: i64 = 500;

const SELECT: &str = "select g.id as grant_id, g.farm_id, f.slug as farm_slug, g.user_id,
        u.email, g.client_id, c.client_name, c.kind as client_kind, g.scope, g.created_at,
        g.last_used_at
    from grants g
    join users u on u.id = g.user_id
    join farms f on f.id = g.farm_id
    join oauth_clients c on c.client_id = g.client_id
    where g.revoked_at is null
      and ($1 is null or g.farm_id = $1)
      and ($2 is null or g.user_id = $2)
      and ($3 is null or u.email = $3)
      and ($4 is null or g.id = $4)";

/// Active grants matching `filter`, newest first.
pub async fn list(
    db: &mut impl Exec,
    filter: &AppFilter<'_>,
) -> Result<Vec<ConnectedApp>, StoreError> {
    Sql::new(format!(
        "{SELECT} order by g.created_at desc, g.id desc limit $5"
    ))
    .bind(filter.farm.map(|f| f.0))
    .bind(filter.user.map(|u| u.0))
    .bind(filter.email)
    .bind(filter.grant.map(|g| g.0))
    .bind(MAX_LISTED)
    .fetch_all(db)
    .await
}

/// The active grant `grant`, if it is active.
pub async fn find_active(
    db: &mut impl Exec,
    grant: GrantId,
) -> Result<Option<ConnectedApp>, StoreError> {
    let filter = AppFilter {
        grant: Some(grant),
        ..AppFilter::default()
    };
    Ok(list(db, &filter).await?.into_iter().next())
}

/// How many apps `user` has connected (the start page shows it).
pub async fn count_for_user(db: &mut impl Exec, user: UserId) -> Result<i64, StoreError> {
    Sql::new("select count(*) from grants where user_id = $1 and revoked_at is null")
        .bind(user.0)
        .fetch_scalar(db)
        .await
}

/// The client ids seen in a farm's audit log or grants, with their names,
/// for the audit page's client filter.
pub async fn clients_of_farm(
    db: &mut impl Exec,
    farm: FarmId,
) -> Result<Vec<(String, String)>, StoreError> {
    Sql::new(
        "select c.client_id, c.client_name from oauth_clients c
         where c.client_id in (select client_id from grants where farm_id = $1)
         order by c.client_name, c.client_id
         limit 200",
    )
    .bind(farm.0)
    .fetch_all(db)
    .await
}
