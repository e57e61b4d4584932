//! Reading a farm's audit log: newest first, in keyset pages, filtered by
//! user, client and kind. Writing is [`super::audit`].

use uuid::Uuid;

use super::{Exec, Sql, StoreError};
use crate::domain::{FarmId, UserId};

crate::record! {
    /// One entry with the names a person reads.
    #[derive(Clone, Debug)]
    pub struct AuditEntry {
        pub id: Uuid,
        pub created_at: i64,
        pub kind: String,
        pub user_email: Option<String>,
        pub client_id: Option<String>,
        pub client_name: Option<String>,
        pub grant_id: Option<Uuid>,
        /// The automation that acted or was acted on, if it still exists.
        pub automation_name: Option<String>,
        /// A small JSON object.
        pub detail: String,
    }
}

/// The position after which a page starts: (created_at, id) of the last
/// entry of the previous page.
pub type AuditCursor = (i64, Uuid);

#[derive(Clone, Debug, Default)]
pub struct AuditFilter {
    pub user: Option<UserId>,
    pub client_id: Option<String>,
    pub kind: Option<String>,
    pub before: Option<AuditCursor>,
}

/// Up to `limit` entries of `farm` matching `filter`, newest first. The
/// order (created_at, id) is served by the `audit_log_farm_time` index.
pub async fn page(
    db: &mut impl Exec,
    farm: FarmId,
    filter: &AuditFilter,
    limit: i64,
) -> Result<Vec<AuditEntry>, StoreError> {
    Sql::new(
        "select a.id, a.created_at, a.kind, u.email as user_email, a.client_id,
             coalesce(c.client_name, au.name) as client_name, a.grant_id,
             au.name as automation_name, a.detail
         from audit_log a
         left join users u on u.id = a.user_id
         left join oauth_clients c on c.client_id = a.client_id
         left join automations au on au.id = a.automation_id
         where a.farm_id = $1
           and ($2 is null or a.user_id = $2)
           and ($3 is null or a.client_id = $3)
           and ($4 is null or a.kind = $4)
           and ($5 is null or a.created_at < $5 or (a.created_at = $5 and a.id < $6))
         order by a.created_at desc, a.id desc
         limit $7",
    )
    .bind(farm.0)
    .bind(filter.user.map(|u| u.0))
    .bind(filter.client_id.as_deref())
    .bind(filter.kind.as_deref())
    .bind(filter.before.map(|(t, _)| t))
    .bind(filter.before.map(|(_, id)| id))
    .bind(limit)
    .fetch_all(db)
    .await
}
