//! Claims in groups. Polling pods ask for work all at once; each claim is a short guarded
//! statement, but a write transaction per claim makes a crowd of pods queue behind one
//! another's commits. Claims that arrive while a group is in the database wait and go
//! together in the next one — one transaction per wave, as a database groups commits — so the
//! latency of a claim stays near one transaction however many pods poll. A claim whose working
//! directory must still be made (a re-attempt's worktree) is finished in its own request, so
//! git never holds up the group.

use std::sync::{Arc, OnceLock};

use tokio::sync::{mpsc, oneshot};
use yoi_db::DbIndex;
use yoi_engine::assignments::{self as asg, AssignmentError, Claimed, LeaseConfig, PodCaller};
use yoi_store::{StoreError, Workspace};

/// Most claims in one transaction.
const MAX_GROUP: usize = 128;

type Answer = Result<Option<Claimed>, AssignmentError>;

struct Ask {
    caller: PodCaller,
    pod: String,
    reply: oneshot::Sender<Answer>,
}

/// The queue claims wait in; its worker starts with the first claim (inside the runtime) and
/// ends when the server state is dropped.
#[derive(Default)]
pub struct ClaimQueue {
    tx: OnceLock<mpsc::UnboundedSender<Ask>>,
}

impl ClaimQueue {
    /// Claim for `pod` in the next group, or `None` when there is no work.
    pub async fn claim(
        &self,
        ws: &Arc<Workspace>,
        index: &DbIndex,
        caller: PodCaller,
        pod: String,
    ) -> Answer {
        let tx = self.tx.get_or_init(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            tokio::spawn(work(ws.clone(), index.clone(), rx));
            tx
        });
        let (reply, answer) = oneshot::channel();
        let gone = || {
            AssignmentError::Store(StoreError::Database {
                reason: "the claim worker stopped (the server is shutting down)".into(),
            })
        };
        tx.send(Ask { caller, pod, reply }).map_err(|_| gone())?;
        answer.await.map_err(|_| gone())?
    }
}

async fn work(ws: Arc<Workspace>, index: DbIndex, mut rx: mpsc::UnboundedReceiver<Ask>) {
    while let Some(first) = rx.recv().await {
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match rx.try_recv() {
                Ok(ask) => group.push(ask),
                Err(_) => break,
            }
        }
        let (ws, index) = (ws.clone(), index.clone());
        let done = tokio::task::spawn_blocking(move || {
            let asks: Vec<(PodCaller, String)> = group
                .iter()
                .map(|a| (a.caller.clone(), a.pod.clone()))
                .collect();
            let rows =
                asg::claim_many(&ws, &index, &asks, LeaseConfig::of(&ws), crate::auth::now());
            (group, rows)
        })
        .await;
        let Ok((group, rows)) = done else {
            // The blocking task panicked: its askers see the channel close.
            continue;
        };
        match rows {
            Ok(rows) => {
                for (ask, row) in group.into_iter().zip(rows) {
                    let _ = ask.reply.send(row);
                }
            }
            Err(e) => {
                let reason = e.to_string();
                for ask in group {
                    let _ = ask
                        .reply
                        .send(Err(AssignmentError::Store(StoreError::Database {
                            reason: reason.clone(),
                        })));
                }
            }
        }
    }
}
