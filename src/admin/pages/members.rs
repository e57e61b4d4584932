//! `/admin/members`: each member's role, flock restriction and state as
//! the page shows them, and one change to one member, audited in its
//! transaction: the role and the flocks a worker sees (always set together,
//! so a role change never silently changes what a worker sees), sign out
//! everywhere, require a password change, disable or enable.
//!
//! The farm always keeps an enabled owner: disabling or demoting the last
//! one is refused ([`PageRefusal::Conflict`]); the rule is checked by
//! [`crate::storage::members::change`] in the same transaction.

use time::OffsetDateTime;

use super::automations::{self, AutomationView};
use super::flocks::{self, Limits};
use super::{OwnerAction, PageRefusal, audit_action, invalid};
use crate::domain::{Access, FarmId, FlockId, Role, UserId};
use crate::storage::farm_admin::{self, FlockAdminRow};
use crate::storage::flock_limits;
use crate::storage::members::{self, Member, MemberChange, MemberOutcome};
use crate::storage::users::Account;
use crate::storage::{Store, StoreError, Tx};

pub struct MemberView {
    pub id: String,
    pub email: String,
    pub role: &'static str,
    /// `None`: sees the whole farm.
    pub flocks: Option<String>,
    /// Every flock of the farm, ticked when this member is limited to it.
    pub choices: Vec<FlockChoice>,
    pub disabled: bool,
    pub must_change_password: bool,
    pub is_you: bool,
}

pub struct FlockChoice {
    pub id: String,
    pub name: String,
    pub house: String,
    pub depleted: bool,
    pub ticked: bool,
}

/// What the members page shows.
pub struct MembersView {
    pub members: Vec<MemberView>,
    /// The farm's automations: not members, but they act with a role too.
    pub automations: Vec<AutomationView>,
}

pub async fn show(store: &Store, owner: &Account) -> Result<MembersView, PageRefusal> {
    let farm = owner.farm();
    let mut db = store.read().await?;
    let rows = members::list(&mut db, farm).await?;
    let farm_flocks = farm_admin::flocks(&mut db, farm).await?;
    let limits = Limits::new(flock_limits::MEMBERS.of_farm(&mut db, farm).await?);
    let members = rows
        .iter()
        .map(|m| member_view(m, owner, &farm_flocks, &limits))
        .collect();
    Ok(MembersView {
        members,
        automations: automations::views(&mut db, farm).await?,
    })
}

fn member_view(
    m: &Member,
    owner: &Account,
    farm_flocks: &[FlockAdminRow],
    limits: &Limits,
) -> MemberView {
    MemberView {
        id: m.user_id.to_string(),
        email: m.email.clone(),
        role: m.role.as_str(),
        flocks: m
            .flock_restricted
            .then(|| limits.names(m.user_id, farm_flocks)),
        choices: farm_flocks
            .iter()
            .map(|f| FlockChoice {
                id: f.id.to_string(),
                name: f.name.to_string(),
                house: f.house.to_string(),
                depleted: f.status.is_depleted(),
                ticked: m.flock_restricted && limits.includes(m.user_id, f.id),
            })
            .collect(),
        disabled: m.disabled,
        must_change_password: m.must_change_password,
        is_you: m.id() == owner.user_id(),
    }
}

/// The fields of a member's forms, as sent. A limited worker's flocks
/// arrive as one `flock` field per ticked box.
#[derive(Clone, Debug, Default)]
pub struct MemberForm<'a> {
    pub action: &'a str,
    pub role: &'a str,
    /// `all` or `some`.
    pub flocks: &'a str,
    pub ticked: Vec<&'a str>,
}

/// Where the owner goes after a change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum After {
    /// Back to the members page.
    Updated,
    /// They signed themself out everywhere or disabled themself: this
    /// session ended too.
    SignedOut,
    /// They stepped down: the page is no longer theirs to see.
    NoLongerOwner,
}

/// Applies the form's change to the member `raw_id` of the owner's farm,
/// with its audit row, in one transaction.
pub async fn change(
    store: &Store,
    owner: &Account,
    raw_id: &str,
    form: &MemberForm<'_>,
    now: OffsetDateTime,
) -> Result<After, PageRefusal> {
    let user = UserId::parse(raw_id).ok_or(PageRefusal::NotFound)?;
    let change = requested(form)?;
    let farm = owner.farm();
    let mut tx = store.write().await?;
    // Any outcome but `Done` returns early and drops the transaction.
    match members::change(&mut tx, farm, user, &change, now).await? {
        MemberOutcome::Done => {}
        MemberOutcome::NotFound => return Err(PageRefusal::NotFound),
        MemberOutcome::UnknownFlock => return Err(flocks::unknown()),
        MemberOutcome::LastOwner => {
            return Err(PageRefusal::Conflict(
                "The farm needs at least one owner who can sign in. Make another member owner first."
                    .to_owned(),
            ));
        }
    }
    let mut done = audited(&mut tx, farm, &change).await?;
    done.about = Some(user);
    audit_action(&mut tx, owner, done, now).await?;
    tx.commit().await?;
    Ok(after(&change, user == owner.user_id()))
}

/// The change the form asks for.
fn requested(form: &MemberForm<'_>) -> Result<MemberChange, PageRefusal> {
    Ok(match form.action {
        "disable" => MemberChange::Disable,
        "enable" => MemberChange::Enable,
        "sign_out_everywhere" => MemberChange::SignOutEverywhere,
        "require_password_change" => MemberChange::RequirePasswordChange,
        "role" => MemberChange::SetAccess(chosen_access(form)?),
        _ => return Err(invalid("Choose an action.")),
    })
}

/// The role and flocks chosen on the form. A worker's flocks must be
/// chosen (all, or some), never assumed; another role needs no choice.
fn chosen_access(form: &MemberForm<'_>) -> Result<Access, PageRefusal> {
    let role = Role::parse(form.role).map_err(PageRefusal::Invalid)?;
    let limited_to = match form.flocks {
        "all" => None,
        "some" => Some(flocks::chosen(&form.ticked)?),
        "" if !role.may_be_flock_restricted() => None,
        _ => {
            return Err(invalid(
                "Choose which flocks this worker sees: all flocks, or only some.",
            ));
        }
    };
    Access::new(role, limited_to).map_err(|err| invalid(err.to_string()))
}

/// Signing oneself out everywhere ends this session too; an owner who
/// stepped down can no longer see the page.
fn after(change: &MemberChange, is_me: bool) -> After {
    match change {
        MemberChange::SignOutEverywhere | MemberChange::Disable if is_me => After::SignedOut,
        MemberChange::SetAccess(access) if is_me && access.role() != Role::Owner => {
            After::NoLongerOwner
        }
        _ => After::Updated,
    }
}

/// The audit row of a change that was made.
async fn audited(
    tx: &mut Tx,
    farm: FarmId,
    change: &MemberChange,
) -> Result<OwnerAction, StoreError> {
    let none = serde_json::json!({});
    Ok(match change {
        MemberChange::Disable => OwnerAction::new("member_disabled", none),
        MemberChange::Enable => OwnerAction::new("member_enabled", none),
        MemberChange::SignOutEverywhere => OwnerAction::new("member_signed_out_everywhere", none),
        MemberChange::RequirePasswordChange => {
            OwnerAction::new("member_must_change_password", none)
        }
        MemberChange::SetAccess(access) => OwnerAction::new(
            "member_role_changed",
            serde_json::json!({
                "role": access.role().as_str(),
                "flocks": flock_words(tx, farm, access).await?,
            }),
        ),
    })
}

/// "all" or the names of the flocks a worker is limited to, for the log.
async fn flock_words(tx: &mut Tx, farm: FarmId, access: &Access) -> Result<String, StoreError> {
    let Some(limited_to) = access.limited_to() else {
        return Ok("all".to_owned());
    };
    let names: Vec<String> = farm_admin::flocks(tx, farm)
        .await?
        .into_iter()
        .filter(|f| limited_to.contains(&FlockId(f.id)))
        .map(|f| f.name.into_string())
        .collect();
    Ok(names.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Email;
    use crate::on_both_engines;
    use crate::storage::users::{self, NewMember};
    use crate::testing::TestStore;
    use crate::testing::databases::Engine;

    /// An enabled member of `farm`, as their session would know them.
    async fn member(store: &Store, farm: FarmId, email: &str, role: Role) -> Account {
        let email = Email::parse(email).unwrap();
        let member = NewMember {
            farm,
            email: &email,
            password_hash: "not-a-hash",
            role,
            flocks: None,
            must_change_password: false,
        };
        let now = OffsetDateTime::now_utc();
        let mut tx = store.write().await.unwrap();
        let id = users::create_member(&mut tx, &member, now).await.unwrap();
        tx.commit().await.unwrap();
        users::find(&mut store.read().await.unwrap(), id)
            .await
            .unwrap()
            .unwrap()
    }

    async fn the_farm_always_keeps_an_enabled_owner(engine: Engine) {
        let db = TestStore::new(engine).await;
        let store = &db.store;
        let now = OffsetDateTime::now_utc();
        let slug = crate::admin::add_farm(store, "Hillside", None, now)
            .await
            .unwrap();
        let farm = crate::admin::farm(store, &slug).await.unwrap().farm_id();
        let owner = member(store, farm, "owner@hillside.example", Role::Owner).await;
        let me = owner.user_id().to_string();
        let step_down = form("role", "manager", "");
        // The only owner may neither disable nor demote themself.
        for last in [form("disable", "", ""), step_down.clone()] {
            let err = change(store, &owner, &me, &last, now).await.unwrap_err();
            assert!(matches!(err, PageRefusal::Conflict(_)), "{err:?}");
        }
        // Nor may another owner who is disabled count as one.
        let other = member(store, farm, "other@hillside.example", Role::Owner).await;
        let theirs = other.user_id().to_string();
        let disable = form("disable", "", "");
        assert_eq!(
            change(store, &owner, &theirs, &disable, now).await.unwrap(),
            After::Updated
        );
        let err = change(store, &owner, &me, &step_down, now)
            .await
            .unwrap_err();
        assert!(matches!(err, PageRefusal::Conflict(_)), "{err:?}");
        // With another enabled owner, they may step down.
        let enable = form("enable", "", "");
        change(store, &owner, &theirs, &enable, now).await.unwrap();
        assert_eq!(
            change(store, &owner, &me, &step_down, now).await.unwrap(),
            After::NoLongerOwner
        );
        // A member of no farm of theirs is not found.
        let stranger = UserId::new().to_string();
        let err = change(store, &owner, &stranger, &disable, now)
            .await
            .unwrap_err();
        assert!(matches!(err, PageRefusal::NotFound), "{err:?}");
    }

    on_both_engines!(the_farm_always_keeps_an_enabled_owner);

    fn form<'a>(action: &'a str, role: &'a str, flocks: &'a str) -> MemberForm<'a> {
        MemberForm {
            action,
            role,
            flocks,
            ticked: Vec::new(),
        }
    }

    #[test]
    fn a_worker_s_flocks_are_chosen_never_assumed() {
        let err = requested(&form("role", "worker", "")).unwrap_err();
        assert!(matches!(err, PageRefusal::Invalid(_)), "{err:?}");
        let whole = requested(&form("role", "worker", "all")).unwrap();
        assert_eq!(
            whole,
            MemberChange::SetAccess(Access::new(Role::Worker, None).unwrap())
        );
        // Another role needs no choice, and cannot be limited.
        assert!(requested(&form("role", "manager", "")).is_ok());
        assert!(requested(&form("role", "manager", "some")).is_err());
        assert!(requested(&form("role", "worker", "some")).is_err());
        assert!(requested(&form("fly", "", "")).is_err());
        assert_eq!(
            requested(&form("disable", "", "")).unwrap(),
            MemberChange::Disable
        );
    }

    #[test]
    fn an_owner_acting_on_themself_is_sent_where_they_may_go() {
        let manager = MemberChange::SetAccess(Access::new(Role::Manager, None).unwrap());
        let owner = MemberChange::SetAccess(Access::new(Role::Owner, None).unwrap());
        assert_eq!(after(&MemberChange::Disable, true), After::SignedOut);
        assert_eq!(
            after(&MemberChange::SignOutEverywhere, true),
            After::SignedOut
        );
        assert_eq!(after(&manager, true), After::NoLongerOwner);
        assert_eq!(after(&owner, true), After::Updated);
        assert_eq!(after(&MemberChange::Disable, false), After::Updated);
        assert_eq!(after(&manager, false), After::Updated);
        assert_eq!(
            after(&MemberChange::RequirePasswordChange, true),
            After::Updated
        );
    }
}
