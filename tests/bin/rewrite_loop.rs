//! `yoi-rewrite-loop ROOT TICKET [GROUP]`: rewrite TICKET's body forever (version 0, 1, 2, …),
//! each body large enough that writing it takes a while; with GROUP, GROUP rewrites at a time in
//! one group commit (`yoi_store::group`). The test kills it at arbitrary moments and checks that
//! item.md is always one whole version.

use std::path::PathBuf;

use yoi_store::ops::{self, EditRequest};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (root, ticket, group) = match args.as_slice() {
        [_, root, ticket] => (root, ticket, 0),
        [_, root, ticket, group] => (root, ticket, group.parse().expect("GROUP is a number")),
        _ => {
            eprintln!("usage: yoi-rewrite-loop ROOT TICKET [GROUP]");
            std::process::exit(2);
        }
    };
    let ws = yoi_tests::open(&PathBuf::from(root));
    let filler = "x".repeat(200 * 1024);
    let edit = |n: u64| {
        let (ticket, filler) = (ticket.clone(), filler.clone());
        move |ws: &yoi_store::Workspace| {
            let req = EditRequest {
                title: None,
                body: Some(format!("version {n}\n{filler}\nend of version {n}")),
            };
            ops::edit(ws, &yoi_tests::ctx("rewriter"), &ticket, &req)
        }
    };
    let mut n = 0u64;
    loop {
        let outcomes = if group == 0 {
            vec![edit(n)(&ws)]
        } else {
            let jobs: Vec<yoi_store::group::Job> = (n..n + group)
                .map(|k| Box::new(edit(k)) as yoi_store::group::Job)
                .collect();
            yoi_store::group::run(&ws, jobs)
        };
        for (k, o) in outcomes.into_iter().enumerate() {
            if let Err(e) = o {
                eprintln!("rewrite {}: {e}", n + k as u64);
                std::process::exit(1);
            }
        }
        if n == 0 {
            // Tell the test the first full version exists.
            println!("ready");
        }
        n += group.max(1);
    }
}
