//! The farm's stock (feed, medication, packaging): quantities and unit
//! costs in integer minor units with an ISO 4217 code.

use time::OffsetDateTime;
use uuid::Uuid;

use super::farm_query::FarmQuery;
use super::{Exec, Sql, StoreError, Tx};
use crate::domain::{Currency, FarmId, Page, PageSize};

/// The categories a stock item may have (the table's check constraint).
pub const CATEGORIES: &[&str] = &["feed", "medication", "packaging", "other"];

crate::record! {
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct StockRow {
        pub category: String,
        pub name: String,
        pub quantity: i64,
        pub unit: String,
        pub unit_cost_minor: i64,
        pub currency: String,
    }
}

/// (category, name): the order stock is listed in; the name is unique per
/// farm.
pub type StockKey = (String, String);

impl StockRow {
    pub fn key(&self) -> StockKey {
        (self.category.clone(), self.name.clone())
    }
}

pub async fn list_page(
    db: &mut impl Exec,
    farm: FarmId,
    category: Option<&str>,
    after: Option<&StockKey>,
    size: PageSize,
) -> Result<Page<StockRow>, StoreError> {
    let mut q = FarmQuery::new(
        farm,
        "select s.category, s.name, s.quantity, s.unit, s.unit_cost_minor, s.currency
         from stock_items s
         where s.farm_id = $1",
    );
    q.equals("s.category", category.map(str::to_owned));
    if let Some((category, name)) = after {
        let (a, b) = (q.bind(category.clone()), q.bind(name.clone()));
        q.push(&format!(" and (s.category, s.name) > ({a}, {b})"));
    }
    let p = q.bind(size.fetch_limit());
    q.push(&format!(" order by s.category, s.name limit {p}"));
    let rows = q.fetch_all(db).await?;
    Ok(Page::from_fetched(rows, size))
}

pub struct NewStockItem<'a> {
    pub category: &'a str,
    pub name: &'a str,
    pub quantity: i64,
    pub unit: &'a str,
    pub unit_cost_minor: i64,
    pub currency: Currency,
}

pub async fn add(
    tx: &mut Tx,
    farm: FarmId,
    item: &NewStockItem<'_>,
    now: OffsetDateTime,
) -> Result<(), StoreError> {
    Sql::new(
        "insert into stock_items (id, farm_id, category, name, quantity, unit,
            unit_cost_minor, currency, updated_at)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(Uuid::now_v7())
    .bind(farm.0)
    .bind(item.category)
    .bind(item.name)
    .bind(item.quantity)
    .bind(item.unit)
    .bind(item.unit_cost_minor)
    .bind(item.currency.code())
    .bind(now)
    .execute(tx)
    .await?;
    Ok(())
}
