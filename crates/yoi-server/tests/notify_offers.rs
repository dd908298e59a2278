//! A workflow offer told through the notification channels (docs/workflows.md, "Offers";
//! docs/inbox.md): the offer is an inbox entry, so a webhook that wants `workflow_offer` gets
//! it once, signed, with the diff it would make and a link to the offer on the dashboard;
//! looking at the history again tells nothing new, and once a person decided, nothing more is
//! sent.

use yoi_core::{Principal, Timestamp};
use yoi_db::DbIndex;
use yoi_engine::notify::{deliver_channel, Notifier};
use yoi_engine::workflows::{invoke, offers};
use yoi_server::notify::{Adapters, Secrets};
use yoi_store::ops::{self, CommentRequest, CreateRequest};
use yoi_store::{Ctx, Workspace};
use yoi_testkit::receiver::Receiver;

const SECRET: &str = "s3cret-for-the-offer-test";
const BRIEF: &str =
    "## Intent\nDo it.\n\n## Acceptance criteria\n- done\n\n## Validation\n`true`\n";

fn at(secs: i64) -> Timestamp {
    Timestamp::from_unix_millis(1_767_225_600_000 + secs * 1000)
}

fn sweep(ws: &Workspace, index: &DbIndex, n: &mut Notifier, a: &Adapters, now: Timestamp) {
    n.promise(ws, index, &ws.config.notify, "http://yoi.test", now)
        .unwrap();
    for c in &ws.config.notify {
        deliver_channel(ws, index, c, a, 50, now).unwrap();
    }
}

#[test]
fn an_offer_reaches_a_webhook_once_with_its_diff() {
    let r = Receiver::start(SECRET);
    let dir = tempfile::tempdir().unwrap();
    yoi_store::init(dir.path(), "main").unwrap();
    let cfg = dir.path().join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&cfg).unwrap();
    let hook = format!(
        "[[notify]]\nname = \"hook\"\nchannel = \"webhook\"\nurl = \"http://{}/hook\"\nsecret_env = \"YOI_TEST_HOOK_KEY\"\nreasons = [\"workflow_offer\"]\n",
        r.addr
    );
    std::fs::write(&cfg, format!("{text}\n{hook}")).unwrap();
    let mut ws = Workspace::open(dir.path()).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (index, _) = DbIndex::attach(
        &mut ws,
        yoi_db::Bridge::new(rt.handle().clone(), yoi_testkit::wall_ms),
    )
    .unwrap();
    let alice = Ctx::new(Principal::human("alice"), at(0));
    for n in 0..3 {
        let req = CreateRequest {
            title: format!("T{n}"),
            body: BRIEF.into(),
            depends_on: Vec::new(),
        };
        let id = ops::create(&ws, &alice, &req).unwrap().ticket.to_string();
        let said = CommentRequest {
            kind: "comment".into(),
            body: "Bump the version in Cargo.toml before tagging a release.".into(),
        };
        invoke::comment(&ws, &alice, &id, &said).unwrap();
    }
    let a = Adapters::new(Secrets::default().with("YOI_TEST_HOOK_KEY", SECRET));
    let mut notifier = Notifier::default();
    sweep(&ws, &index, &mut notifier, &a, at(1));
    assert!(r.got("/hook").is_empty(), "nothing waits yet");

    let found = offers::detect(&ws, &index, at(2)).unwrap();
    let o = &found.offered[0];
    sweep(&ws, &index, &mut notifier, &a, at(3));
    let hooks = r.got("/hook");
    assert_eq!(hooks.len(), 1);
    let body = hooks[0].json();
    assert_eq!(body["entry"]["reason"], "workflow_offer");
    assert_eq!(body["entry"]["key"], format!("workflow_offer:{}", o.id));
    let detail = body["entry"]["detail"].as_str().unwrap();
    assert!(
        detail.contains("```diff\n--- /dev/null\n+++ b/.yoi/workflow/"),
        "{detail}"
    );
    assert!(
        detail.contains("+Bump the version in Cargo.toml"),
        "{detail}"
    );
    assert_eq!(
        body["link"],
        format!("http://yoi.test/workflows#o-{}", o.id)
    );

    // Once: another look, more sweeps, a notifier that forgot everything.
    assert!(offers::detect(&ws, &index, at(4))
        .unwrap()
        .offered
        .is_empty());
    sweep(&ws, &index, &mut notifier, &a, at(5));
    sweep(&ws, &index, &mut Notifier::default(), &a, at(3_600));
    assert_eq!(r.got("/hook").len(), 1);

    // Decided: the entry is gone, nothing more is sent.
    offers::reject(&ws, &o.id, "alice", "we tag by hand", at(3_601)).unwrap();
    sweep(&ws, &index, &mut notifier, &a, at(3_602));
    assert_eq!(r.got("/hook").len(), 1);
    assert!(yoi_engine::inbox::inbox(&ws, &index)
        .unwrap()
        .entries
        .is_empty());
}
