//! `yoi-crash-before-index ROOT OPERATION TICKET [MESSAGE]`: perform one operation on TICKET with
//! an index hook that aborts the process the moment the index is told about it — after the
//! operation's files are written, before any database write. OPERATION is `comment` (MESSAGE is
//! the comment) or `ready`. The test then proves the next start heals the index.
//!
//! Exits 2 on bad usage and 1 when the operation itself fails; reaching the hook never returns.

use std::path::PathBuf;
use std::sync::Arc;

use yoi_core::{Principal, TicketId, Timestamp};
use yoi_store::index_hook::{IndexHook, IndexRef, OpRecord};
use yoi_store::ops::{self, CommentRequest, TransitionRequest};
use yoi_store::{Ctx, StoreError, Workspace};

/// Printed to stderr just before the abort, so the test can tell this abort from any other.
const MARKER: &str = "yoi-crash-before-index: files written, aborting before the index";

struct AbortBeforeIndex;

impl IndexHook for AbortBeforeIndex {
    fn tickets_changed(
        &self,
        _ws: &Workspace,
        _ids: &[TicketId],
        _ops: &[OpRecord],
    ) -> Result<(), StoreError> {
        eprintln!("{MARKER}");
        std::process::abort()
    }

    fn find_operation(&self, _op_id: &str) -> Result<Option<OpRecord>, StoreError> {
        Ok(None)
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (root, op, ticket, message) = match args.as_slice() {
        [_, root, op, ticket] => (root, op.as_str(), ticket, None),
        [_, root, op, ticket, message] => (root, op.as_str(), ticket, Some(message.clone())),
        _ => usage(),
    };
    let mut ws = yoi_tests::open(&PathBuf::from(root));
    ws.index = Some(IndexRef(Arc::new(AbortBeforeIndex)));
    // An hour after the tests' fixed clock, so item.md's updated_at visibly moves.
    let ctx = Ctx::new(
        Principal::human("crasher"),
        Timestamp::parse("2026-11-29T11:00:00Z").expect("valid timestamp"),
    );
    let result = match (op, message) {
        ("comment", Some(body)) => ops::comment(
            &ws,
            &ctx,
            ticket,
            &CommentRequest {
                kind: "comment".into(),
                body,
            },
        ),
        ("ready", None) => ops::mark_ready(&ws, &ctx, ticket, &TransitionRequest::default()),
        _ => usage(),
    };
    match result {
        Ok(outcome) => {
            eprintln!("the operation finished without reaching the index hook: {outcome:?}");
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("{op} {ticket}: {e}");
            std::process::exit(1);
        }
    }
}

fn usage() -> ! {
    eprintln!("usage: yoi-crash-before-index ROOT (comment TICKET MESSAGE | ready TICKET)");
    std::process::exit(2)
}
