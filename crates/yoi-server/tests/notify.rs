//! Notifications with real receivers, driven step by step with a fake clock: an HTTP receiver
//! started by the test checks each webhook's HMAC signature and records the Slack and ntfy
//! payloads; a real SMTP server (`aiosmtpd` from PyPI, found through `YOI_AIOSMTPD`) receives
//! the email; a private session D-Bus (`dbus-daemon`) with a notification server that owns
//! `org.freedesktop.Notifications` (jeepney from PyPI, found through `YOI_DBUS_PY`) receives
//! the desktop notifications. Each open inbox entry reaches each channel exactly once — across
//! repeated sweeps and a restarted notifier — a receiver that is down for ten minutes gets the
//! entry once when it is back with every attempt in the log, and an entry that closed first is
//! never sent.

use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use yoi_core::{Principal, Timestamp};
use yoi_db::notify::DeliveryStatus;
use yoi_db::DbIndex;
use yoi_engine::notify::{deliver_channel, Notifier};
use yoi_server::notify::{Adapters, Secrets};
use yoi_store::ops::{self, CreateRequest, TransitionRequest};
use yoi_store::{Ctx, Workspace};
use yoi_testkit::dbus::{Notifications, SessionBus};
use yoi_testkit::receiver::Receiver;

const BRIEF: &str =
    "## Intent\nDo it.\n\n## Acceptance criteria\n- done\n\n## Validation\n`true`\n";
const SECRET: &str = "s3cret-for-the-test";

fn at(secs: i64) -> Timestamp {
    Timestamp::from_unix_millis(1_767_225_600_000 + secs * 1000)
}

/// A workspace whose `.yoi/workspace.toml` ends with `notify` (the `[[notify]]` entries), with
/// its SQLite index.
struct Fx {
    _dir: tempfile::TempDir,
    ws: Workspace,
    index: DbIndex,
    _rt: tokio::runtime::Runtime,
}

impl Fx {
    fn new(notify: &str) -> Fx {
        let dir = tempfile::tempdir().unwrap();
        yoi_store::init(dir.path(), "main").unwrap();
        let cfg = dir.path().join(".yoi/workspace.toml");
        let text = std::fs::read_to_string(&cfg).unwrap();
        std::fs::write(&cfg, format!("{text}\n{notify}")).unwrap();
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
        Fx {
            _dir: dir,
            ws,
            index,
            _rt: rt,
        }
    }

    /// A queued ticket with an `attention` event of `reason`.
    fn stuck(&self, title: &str, reason: &str) -> String {
        let alice = Ctx::new(Principal::human("alice"), at(0));
        let req = CreateRequest {
            title: title.into(),
            body: BRIEF.into(),
            depends_on: Vec::new(),
        };
        let id = ops::create(&self.ws, &alice, &req)
            .unwrap()
            .ticket
            .to_string();
        let t = TransitionRequest::default();
        ops::mark_ready(&self.ws, &alice, &id, &t).unwrap();
        ops::queue(&self.ws, &alice, &id, &t).unwrap();
        self.raise(&id, reason);
        id
    }

    fn raise(&self, id: &str, reason: &str) {
        let service = Ctx::new(Principal::orchestrator(), at(0));
        ops::attention(
            &self.ws,
            &service,
            id,
            reason,
            "Routing stopped: three failures.",
        )
        .unwrap();
    }

    fn channel(&self, name: &str) -> &yoi_store::notify_config::NotifyChannel {
        self.ws
            .config
            .notify
            .iter()
            .find(|c| c.name == name)
            .unwrap()
    }

    /// One sweep at `now`: promise, then every channel's due deliveries.
    fn sweep(&self, notifier: &mut Notifier, adapters: &Adapters, now: Timestamp) {
        notifier
            .promise(
                &self.ws,
                &self.index,
                &self.ws.config.notify,
                "http://yoi.test",
                now,
            )
            .unwrap();
        for c in &self.ws.config.notify {
            deliver_channel(&self.ws, &self.index, c, adapters, 50, now).unwrap();
        }
    }
}

fn http_channels(r: &Receiver) -> String {
    format!(
        "[[notify]]\nname = \"hook\"\nchannel = \"webhook\"\nurl = \"http://{a}/hook\"\nsecret_env = \"YOI_TEST_HOOK_KEY\"\n\n\
         [[notify]]\nname = \"slack\"\nchannel = \"slack\"\nurl = \"http://{a}/slack\"\nreasons = [\"circuit_open\"]\n\n\
         [[notify]]\nname = \"ntfy\"\nchannel = \"ntfy\"\nurl = \"http://{a}/ntfy\"\npriority = 5\n",
        a = r.addr
    )
}

fn adapters() -> Adapters {
    Adapters::new(Secrets::default().with("YOI_TEST_HOOK_KEY", SECRET))
}

#[test]
fn each_channel_gets_each_entry_once_signed_and_in_its_own_format() {
    let r = Receiver::start(SECRET);
    let f = Fx::new(&http_channels(&r));
    let id = f.stuck("Fix <login>", "circuit_open");
    let a = adapters();
    let mut notifier = Notifier::default();
    f.sweep(&mut notifier, &a, at(1));

    let hooks = r.got("/hook");
    assert_eq!(hooks.len(), 1);
    let body = hooks[0].json();
    assert_eq!(body["schema"], "yoi.notification.v1");
    assert_eq!(body["event"], "inbox.entry_opened");
    assert_eq!(body["delivery"], hooks[0].headers["yoi-delivery"].as_str());
    assert_eq!(body["entry"]["reason"], "circuit_open");
    assert_eq!(body["entry"]["ticket"], id.as_str());
    assert_eq!(body["link"], format!("http://yoi.test/tickets/{id}"));

    let slack = r.got("/slack");
    assert_eq!(slack.len(), 1);
    let s = slack[0].json();
    assert!(
        s["text"]
            .as_str()
            .unwrap()
            .contains("Circuit open: Fix <login>"),
        "{s}"
    );
    let section = s["blocks"][0]["text"]["text"].as_str().unwrap();
    assert!(
        section.contains(&format!(
            "<http://yoi.test/tickets/{id}|Circuit open: Fix &lt;login&gt;>"
        )),
        "{section}"
    );

    let ntfy = r.got("/ntfy");
    assert_eq!(ntfy.len(), 1);
    let h = &ntfy[0].headers;
    assert_eq!(h["title"], "Circuit open: Fix <login>");
    assert_eq!(h["priority"], "5");
    assert_eq!(h["tags"], "yoi,circuit_open");
    assert_eq!(h["click"], format!("http://yoi.test/tickets/{id}"));
    assert!(String::from_utf8_lossy(&ntfy[0].body).contains("yoi ticket retry"));

    // Exactly once: more sweeps, later, and a notifier that forgot everything (a restart).
    f.sweep(&mut notifier, &a, at(2));
    f.sweep(&mut Notifier::default(), &a, at(3_600));
    assert_eq!(
        (
            r.got("/hook").len(),
            r.got("/slack").len(),
            r.got("/ntfy").len()
        ),
        (1, 1, 1)
    );
    let rows = f.index.notify_deliveries(None, 10).unwrap();
    assert_eq!(rows.len(), 3);
    assert!(rows
        .iter()
        .all(|d| d.status == DeliveryStatus::Delivered && d.attempts == 1));

    // Slack wants circuits only: a deferred merge reaches the webhook and ntfy alone.
    f.raise(&id, "merge_deferred");
    f.sweep(&mut notifier, &a, at(3_601));
    assert_eq!(
        (
            r.got("/hook").len(),
            r.got("/slack").len(),
            r.got("/ntfy").len()
        ),
        (2, 1, 2)
    );
}

#[test]
fn a_receiver_down_for_ten_minutes_gets_the_entry_once_when_back_with_every_attempt_logged() {
    let r = Receiver::start(SECRET);
    let f = Fx::new(&http_channels(&r));
    let id = f.stuck("Flaky", "rounds_exhausted");
    let a = adapters();
    let mut notifier = Notifier::default();
    r.set_down(true);
    // Ten minutes of sweeps once a second (the server's cadence), the receiver down throughout.
    for s in 0..600 {
        f.sweep(&mut notifier, &a, at(s));
    }
    assert!(r.got("/hook").is_empty());
    let hook = f.channel("hook");
    let failing = f.index.notify_deliveries(Some(&hook.name), 10).unwrap();
    assert_eq!(failing.len(), 1);
    let tries = failing[0].attempts;
    assert!(
        (5..=12).contains(&tries),
        "backoff, not a try per sweep: {tries}"
    );
    assert_eq!(failing[0].status, DeliveryStatus::Pending);

    r.set_down(false);
    let mut s = 600;
    while r.got("/hook").is_empty() {
        s += 1;
        assert!(s < 600 + 3_600, "not delivered within the longest backoff");
        f.sweep(&mut notifier, &a, at(s));
    }
    for later in [s + 1, s + 60, s + 86_400] {
        f.sweep(&mut notifier, &a, at(later));
    }
    assert_eq!(r.got("/hook").len(), 1, "delivered once");
    let row = &f.index.notify_deliveries(Some("hook"), 10).unwrap()[0];
    assert_eq!(row.status, DeliveryStatus::Delivered);
    let attempts = f.index.notify_attempts("hook", &row.entry_key).unwrap();
    assert_eq!(attempts.len() as i64, row.attempts);
    assert!(attempts[..attempts.len() - 1]
        .iter()
        .all(|t| !t.ok && t.answer.starts_with("HTTP 503")));
    let last = attempts.last().unwrap();
    assert!(last.ok && last.answer.starts_with("HTTP 200"), "{last:?}");
    assert_eq!(r.got("/hook")[0].json()["entry"]["ticket"], id.as_str());
}

#[test]
fn an_entry_that_closes_before_its_delivery_is_skipped_and_never_sent() {
    let r = Receiver::start(SECRET);
    let f = Fx::new(&http_channels(&r));
    let id = f.stuck("Short", "circuit_open");
    let a = adapters();
    let mut notifier = Notifier::default();
    notifier
        .promise(
            &f.ws,
            &f.index,
            &f.ws.config.notify,
            "http://yoi.test",
            at(1),
        )
        .unwrap();
    let alice = Ctx::new(Principal::human("alice"), at(2));
    ops::retry(&f.ws, &alice, &id, None).unwrap();
    for c in &f.ws.config.notify {
        deliver_channel(&f.ws, &f.index, c, &a, 50, at(3)).unwrap();
    }
    assert!(r.all().is_empty());
    let rows = f.index.notify_deliveries(None, 10).unwrap();
    assert_eq!(rows.len(), 3);
    assert!(rows
        .iter()
        .all(|d| d.status == DeliveryStatus::Skipped && d.attempts == 0));
}

/// A real SMTP server: `aiosmtpd` from PyPI writing what it receives into a maildir. Killed
/// (with its process group) when dropped.
struct Smtpd {
    child: Child,
    port: u16,
    maildir: PathBuf,
}

impl Smtpd {
    fn start(dir: &Path) -> Smtpd {
        let program = std::env::var("YOI_AIOSMTPD").unwrap_or_else(|_| "aiosmtpd".into());
        let port = {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let maildir = dir.join("maildir");
        let child = Command::new(&program)
            .args(["-n", "-l", &format!("127.0.0.1:{port}")])
            .args(["-c", "aiosmtpd.handlers.Mailbox"])
            .arg(&maildir)
            .stdin(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot run `{program}` ({e}): install the SMTP server with \
                     `python3 -m venv V && V/bin/pip install aiosmtpd==1.4.6` and set YOI_AIOSMTPD=V/bin/aiosmtpd \
                     (.ci/run does)"
                )
            });
        let s = Smtpd {
            child,
            port,
            maildir,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "aiosmtpd did not start listening"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        s
    }

    fn messages(&self) -> Vec<String> {
        let Ok(dir) = std::fs::read_dir(self.maildir.join("new")) else {
            return Vec::new();
        };
        dir.map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
            .collect()
    }
}

impl Drop for Smtpd {
    fn drop(&mut self) {
        unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

#[test]
fn an_email_reaches_a_real_smtp_server_once() {
    let side = tempfile::tempdir().unwrap();
    let smtpd = Smtpd::start(side.path());
    let f = Fx::new(&format!(
        "[[notify]]\nname = \"mail\"\nchannel = \"email\"\nsmtp_host = \"127.0.0.1\"\nsmtp_port = {}\ntls = \"none\"\nfrom = \"yoi@example.com\"\nto = [\"alice@example.com\", \"bob@example.com\"]\n",
        smtpd.port
    ));
    let id = f.stuck("Mail me", "merge_deferred");
    let a = adapters();
    let mut notifier = Notifier::default();
    f.sweep(&mut notifier, &a, at(1));
    f.sweep(&mut notifier, &a, at(2));
    f.sweep(&mut Notifier::default(), &a, at(3));

    let row = &f.index.notify_deliveries(Some("mail"), 10).unwrap()[0];
    assert_eq!(row.status, DeliveryStatus::Delivered, "{row:?}");
    assert!(
        row.last_answer.as_deref().unwrap().starts_with("SMTP 250"),
        "{row:?}"
    );
    let mails = smtpd.messages();
    assert_eq!(mails.len(), 1, "{mails:?}");
    let m = &mails[0];
    assert!(m.contains("Subject: [yoi] Merge deferred: Mail me"), "{m}");
    assert!(
        m.contains(&format!(
            "Message-ID: <{}@yoi.invalid>",
            row.idempotency_key
        )),
        "{m}"
    );
    assert!(m.contains("To: alice@example.com, bob@example.com"), "{m}");
    assert!(m.contains(&format!("http://yoi.test/tickets/{id}")), "{m}");
}

/// A desktop channel, its urgency from `priority`.
fn desktop_channel(priority: u8) -> String {
    format!("[[notify]]\nname = \"desk\"\nchannel = \"desktop\"\npriority = {priority}\n")
}

/// A queued ticket with an `attention` event whose detail holds markup characters.
fn stuck_with_markup(f: &Fx, title: &str) -> String {
    let id = f.stuck(title, "circuit_open");
    let service = Ctx::new(Principal::orchestrator(), at(0));
    ops::attention(
        &f.ws,
        &service,
        &id,
        "circuit_open",
        "Three failures in <main> & more.",
    )
    .unwrap();
    id
}

#[test]
fn a_desktop_notification_reaches_the_session_bus_once_with_its_delivery_key() {
    let bus = SessionBus::start();
    let desk = Notifications::start(&bus, &["body", "body-markup"]);
    let f = Fx::new(&desktop_channel(5));
    let id = stuck_with_markup(&f, "Fix <login>");
    let a = Adapters::new(Secrets::default().with_session_bus(&bus.address));
    let mut notifier = Notifier::default();
    f.sweep(&mut notifier, &a, at(1));
    // Exactly once: more sweeps, later, and a notifier that forgot everything (a restart).
    f.sweep(&mut notifier, &a, at(2));
    f.sweep(&mut Notifier::default(), &a, at(3_600));

    let got = desk.got();
    assert_eq!(got.len(), 1, "{got:?}");
    let n = &got[0];
    let row = &f.index.notify_deliveries(Some("desk"), 10).unwrap()[0];
    assert_eq!(row.status, DeliveryStatus::Delivered, "{row:?}");
    assert_eq!(row.attempts, 1);
    assert_eq!(row.last_answer.as_deref(), Some("D-Bus Notify: id 1"));
    assert_eq!(n["app_name"], "yoi");
    assert_eq!(n["replaces_id"], 0);
    assert_eq!(n["expire_timeout"], -1);
    assert_eq!(n["actions"], serde_json::json!([]));
    // The summary is plain text by the specification; the body is escaped for a server that
    // reads markup.
    assert_eq!(n["summary"], "Circuit open: Fix <login>");
    let body = n["body"].as_str().unwrap();
    assert!(
        body.starts_with("Three failures in &lt;main&gt; &amp; more."),
        "{body}"
    );
    assert!(body.contains(&format!("yoi ticket retry {id}")), "{body}");
    assert!(
        body.contains(&format!("http://yoi.test/tickets/{id}")),
        "{body}"
    );
    let hints = &n["hints"];
    assert_eq!(
        hints["x-yoi-delivery"],
        serde_json::json!({"signature": "s", "value": row.idempotency_key})
    );
    assert_eq!(
        hints["urgency"],
        serde_json::json!({"signature": "y", "value": 2}),
        "priority 5 is critical"
    );
    assert_eq!(
        hints["x-yoi-link"]["value"],
        format!("http://yoi.test/tickets/{id}")
    );
}

#[test]
fn a_desktop_without_a_notification_server_gets_the_entry_once_one_starts() {
    let f = Fx::new(&desktop_channel(3));
    stuck_with_markup(&f, "Later");
    let mut notifier = Notifier::default();

    // A server started without a session bus: the attempt fails saying so.
    f.sweep(&mut notifier, &Adapters::new(Secrets::default()), at(0));
    let attempts = |f: &Fx| {
        let row = &f.index.notify_deliveries(Some("desk"), 10).unwrap()[0];
        (
            row.clone(),
            f.index.notify_attempts("desk", &row.entry_key).unwrap(),
        )
    };
    let (row, log) = attempts(&f);
    assert_eq!(row.status, DeliveryStatus::Pending);
    assert!(log[0].answer.starts_with("no session bus"), "{log:?}");

    // A bus, but nobody owns org.freedesktop.Notifications yet.
    let bus = SessionBus::start();
    let a = Adapters::new(Secrets::default().with_session_bus(&bus.address));
    let mut s = 1;
    while attempts(&f).1.len() < 3 {
        s += 1;
        f.sweep(&mut notifier, &a, at(s));
    }
    let (row, log) = attempts(&f);
    assert_eq!(row.status, DeliveryStatus::Pending);
    assert!(
        log[1..].iter().all(|t| !t.ok
            && t.answer
                .contains("org.freedesktop.DBus.Error.ServiceUnknown")),
        "{log:?}"
    );

    // A notification server that reads no markup starts: delivered once, as plain text.
    let desk = Notifications::start(&bus, &["body"]);
    while desk.got().is_empty() {
        s += 1;
        assert!(s < 3_600, "not delivered within the longest backoff");
        f.sweep(&mut notifier, &a, at(s));
    }
    for later in [s + 1, s + 60, s + 86_400] {
        f.sweep(&mut notifier, &a, at(later));
    }
    let got = desk.got();
    assert_eq!(got.len(), 1, "delivered once: {got:?}");
    assert!(got[0]["body"]
        .as_str()
        .unwrap()
        .starts_with("Three failures in <main> & more."));
    assert_eq!(
        got[0]["hints"]["urgency"]["value"], 1,
        "priority 3 is normal"
    );
    let (row, log) = attempts(&f);
    assert_eq!(row.status, DeliveryStatus::Delivered);
    assert_eq!(log.len() as i64, row.attempts);
    assert!(log.last().unwrap().ok);
}
