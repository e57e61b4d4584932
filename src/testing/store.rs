//! A migrated [`Store`] on a fresh database of its own, for the unit tests
//! that need one (the integration suite starts the whole app instead, so
//! this file is not shared with it).

use super::databases::{Engine, TestDatabase};
use crate::storage::Store;

/// A store and the database under it, dropped together.
pub struct TestStore {
    pub store: Store,
    _db: TestDatabase,
}

impl TestStore {
    pub async fn new(engine: Engine) -> Self {
        let db = TestDatabase::create(engine).await;
        let store = Store::connect(&db.url).await.unwrap();
        Self { store, _db: db }
    }

    /// On a temporary SQLite file: for protocol code whose rules do not
    /// depend on the engine (the integration suite runs both).
    pub async fn sqlite() -> Self {
        Self::new(Engine::Sqlite).await
    }
}
