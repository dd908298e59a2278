//! `yoi-rewrite-loop ROOT TICKET`: rewrite TICKET's body forever (version 0, 1, 2, …), each
//! body large enough that writing it takes a while. The test kills it at arbitrary moments and
//! checks that item.md is always one whole version.

use std::path::PathBuf;

use yoi_store::ops::{self, EditRequest};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, root, ticket] = args.as_slice() else {
        eprintln!("usage: yoi-rewrite-loop ROOT TICKET");
        std::process::exit(2);
    };
    let ws = yoi_tests::open(&PathBuf::from(root));
    let ctx = yoi_tests::ctx("rewriter");
    let filler = "x".repeat(200 * 1024);
    for n in 0u64.. {
        let req = EditRequest {
            title: None,
            body: Some(format!("version {n}\n{filler}\nend of version {n}")),
        };
        if let Err(e) = ops::edit(&ws, &ctx, ticket, &req) {
            eprintln!("rewrite {n}: {e}");
            std::process::exit(1);
        }
        if n == 0 {
            // Tell the test the first full version exists.
            println!("ready");
        }
    }
}
