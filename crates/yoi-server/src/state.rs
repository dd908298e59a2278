//! Shared server state: the workspace (with its database index attached) and the live-event
//! signal. File operations are synchronous and take the workspace lock, so they run on blocking
//! threads; index reads are async and run on the runtime.

use std::sync::Arc;

use tokio::sync::watch;
use yoi_store::db::{Db, DbIndex};
use yoi_store::{StoreError, Workspace};

use crate::error::ApiError;

#[derive(Clone)]
pub struct AppState {
    pub ws: Arc<Workspace>,
    pub index: DbIndex,
    /// Bumped after every mutation so live-event streams look for new outbox rows at once.
    pub changed: Arc<watch::Sender<u64>>,
}

impl AppState {
    pub fn new(ws: Workspace, index: DbIndex) -> Self {
        AppState {
            ws: Arc::new(ws),
            index,
            changed: Arc::new(watch::channel(0).0),
        }
    }

    pub fn db(&self) -> &Db {
        &self.index.db
    }

    /// Run a store operation on a blocking thread, then wake live-event streams.
    pub async fn op<T, F>(&self, f: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce(&Workspace) -> Result<T, StoreError> + Send + 'static,
    {
        let ws = self.ws.clone();
        let result = tokio::task::spawn_blocking(move || f(&ws))
            .await
            .map_err(|e| ApiError::internal("operation task", e))?;
        self.changed.send_modify(|n| *n += 1);
        Ok(result?)
    }

    /// Run a synchronous read (files) on a blocking thread.
    pub async fn read<T, F>(&self, f: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce(&Workspace) -> Result<T, StoreError> + Send + 'static,
    {
        let ws = self.ws.clone();
        tokio::task::spawn_blocking(move || f(&ws))
            .await
            .map_err(|e| ApiError::internal("read task", e))?
            .map_err(ApiError::from)
    }
}
