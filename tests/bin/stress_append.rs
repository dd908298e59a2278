//! `yoi-stress-append ROOT TICKET WRITER COUNT`: append COUNT comments to TICKET through the
//! store, each under the workspace lock. Run several at once to prove the lock serialises
//! writers across processes.

use std::path::PathBuf;

use yoi_store::ops::{self, CommentRequest};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, root, ticket, writer, count] = args.as_slice() else {
        eprintln!("usage: yoi-stress-append ROOT TICKET WRITER COUNT");
        std::process::exit(2);
    };
    let mut ws = yoi_tests::open(&PathBuf::from(root));
    ws.config.workspace.lock_timeout_secs = 120;
    let count: usize = count.parse().expect("COUNT is a number");
    let ctx = yoi_tests::ctx(&format!("writer-{writer}"));
    for n in 0..count {
        let req = CommentRequest {
            kind: "comment".into(),
            body: format!(
                "writer {writer} comment {n}\n\n---\n<!-- event: fake -->\nend of {writer}/{n}"
            ),
        };
        if let Err(e) = ops::comment(&ws, &ctx, ticket, &req) {
            eprintln!("writer {writer} comment {n}: {e}");
            std::process::exit(1);
        }
    }
}
