//! Desktop: one freedesktop notification per entry (`org.freedesktop.Notifications.Notify` on
//! the session bus), spoken over the D-Bus wire protocol directly — a Unix socket, the
//! `EXTERNAL` login, `Hello`, `GetCapabilities` and `Notify`, each a method call answered by its
//! return or an error. That is all a notification needs, so this module is the whole client:
//! no D-Bus crate (zbus brings an async runtime of its own and some sixty crates) and no
//! `gdbus`/`notify-send` that a server host may lack (`dbus-send` cannot build `Notify`'s
//! `a{sv}` hints at all); docs/inbox.md says why.
//!
//! It refuses what it does not need: TCP and `launchd:` addresses, file descriptors, a peer
//! that asks for another login, and messages over 1 MiB. The idempotency key travels as the
//! hint `x-yoi-delivery`, so a notification daemon or a script reading the bus can drop the
//! duplicate of a crash between sending and recording.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use yoi_core::inbox::InboxReason;
use yoi_engine::notify::Notification;
use yoi_store::notify_config::NotifyChannel;

/// How long one read or write on the bus may wait.
pub const TIMEOUT: Duration = Duration::from_secs(10);
/// The largest message read from the bus.
const MAX_MESSAGE: usize = 1 << 20;
/// Messages read while waiting for one answer (signals such as `NameAcquired` come between).
const MAX_READS: usize = 256;

const BUS_NAME: &str = "org.freedesktop.DBus";
const BUS_PATH: &str = "/org/freedesktop/DBus";
const NOTIFY_NAME: &str = "org.freedesktop.Notifications";
const NOTIFY_PATH: &str = "/org/freedesktop/Notifications";

/// The session bus of this process: `DBUS_SESSION_BUS_ADDRESS`, else `$XDG_RUNTIME_DIR/bus`
/// when that socket exists (where systemd puts it), as libdbus and sd-bus look.
pub fn session_bus_from_env() -> Option<String> {
    if let Ok(a) = std::env::var("DBUS_SESSION_BUS_ADDRESS") {
        if !a.is_empty() {
            return Some(a);
        }
    }
    let dir = std::env::var("XDG_RUNTIME_DIR").ok()?;
    let socket = Path::new(&dir).join("bus");
    socket
        .exists()
        .then(|| format!("unix:path={}", socket.display()))
}

/// Send `n` as a desktop notification on the bus at `address`: `D-Bus Notify: id N` on
/// success, the reason otherwise.
pub fn send(address: Option<&str>, c: &NotifyChannel, n: &Notification) -> Result<String, String> {
    let address = address.ok_or(
        "no session bus: DBUS_SESSION_BUS_ADDRESS is not set and $XDG_RUNTIME_DIR/bus does not exist where yoi serve runs",
    )?;
    let mut bus = Conn::open(address)?;
    bus.call(BUS_NAME, BUS_PATH, BUS_NAME, "Hello", "", &[])?;
    // Body markup is optional for a server; escape only for one that says it reads it (a
    // server that cannot tell is sent plain text, and `Notify` says whether it is there).
    let markup = bus
        .call(
            NOTIFY_NAME,
            NOTIFY_PATH,
            NOTIFY_NAME,
            "GetCapabilities",
            "",
            &[],
        )
        .is_ok_and(|caps| {
            read_strings(&caps.body, caps.little)
                .iter()
                .any(|c| c == "body-markup")
        });
    let body = notify_body(c, n, markup);
    let answer = bus.call(
        NOTIFY_NAME,
        NOTIFY_PATH,
        NOTIFY_NAME,
        "Notify",
        "susssasa{sv}i",
        &body,
    )?;
    let id = Reader::new(&answer.body, answer.little).u32()?;
    Ok(format!("D-Bus Notify: id {id}"))
}

/// `Notify`'s arguments: app name, replaces id, icon, summary (always plain text), body,
/// actions, hints (urgency, the delivery key, the link), expiry (the server's default).
fn notify_body(c: &NotifyChannel, n: &Notification, markup: bool) -> Vec<u8> {
    let text = format!(
        "{}\n\nWhat to do: {}\n{}",
        n.entry.detail, n.entry.command, n.link
    );
    let text = if markup { escape_markup(&text) } else { text };
    // ntfy's priority 1–5 read as urgency: 1–2 low, 3–4 normal, 5 critical. A merge is low.
    let urgency: u8 = match c.priority {
        _ if n.entry.reason == InboxReason::Done => 0,
        Some(1 | 2) => 0,
        Some(5) => 2,
        _ => 1,
    };
    let mut w = Writer::default();
    w.string("yoi");
    w.u32(0);
    w.string("");
    w.string(&n.subject());
    w.string(&text);
    w.array(4, |_| {});
    w.array(8, |w| {
        w.dict_entry("urgency", "y", |w| w.byte(urgency));
        w.dict_entry("x-yoi-delivery", "s", |w| w.string(&n.delivery));
        w.dict_entry("x-yoi-link", "s", |w| w.string(&n.link));
    });
    w.i32(-1);
    w.buf
}

/// The markup the specification allows is a small XML subset: its three specials escaped.
fn escape_markup(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The strings of an `as` body (the capabilities); empty when it is not one.
fn read_strings(body: &[u8], little: bool) -> Vec<String> {
    let mut r = Reader::new(body, little);
    let Ok(len) = r.u32() else {
        return Vec::new();
    };
    let end = r.pos + len as usize;
    let mut out = Vec::new();
    while r.pos < end {
        match r.string() {
            Ok(s) => out.push(s),
            Err(_) => break,
        }
    }
    out
}

/// One connection to a bus, logged in.
struct Conn {
    stream: BufReader<UnixStream>,
    serial: u32,
}

/// A method's answer: its body and byte order.
struct Answer {
    body: Vec<u8>,
    little: bool,
}

impl Conn {
    /// Connect to the first address of `address` that answers, and log in as this process's
    /// user (`EXTERNAL`: the bus reads the uid from the socket).
    fn open(address: &str) -> Result<Conn, String> {
        let mut tried = Vec::new();
        for a in address.split(';').filter(|a| !a.is_empty()) {
            match connect(a) {
                Ok(s) => return Conn::login(s).map_err(|e| format!("D-Bus {a}: {e}")),
                Err(e) => tried.push(format!("{a}: {e}")),
            }
        }
        Err(format!(
            "cannot reach the session bus ({})",
            tried.join("; ")
        ))
    }

    fn login(stream: UnixStream) -> Result<Conn, String> {
        stream.set_read_timeout(Some(TIMEOUT)).map_err(io)?;
        stream.set_write_timeout(Some(TIMEOUT)).map_err(io)?;
        let mut stream = BufReader::new(stream);
        let uid = unsafe { libc::getuid() }.to_string();
        let hex: String = uid.bytes().map(|b| format!("{b:02x}")).collect();
        stream
            .get_mut()
            .write_all(format!("\0AUTH EXTERNAL {hex}\r\n").as_bytes())
            .map_err(io)?;
        let mut line = String::new();
        stream.by_ref().take(512).read_line(&mut line).map_err(io)?;
        if !line.starts_with("OK ") {
            return Err(format!("the bus refused the login: {}", line.trim()));
        }
        stream.get_mut().write_all(b"BEGIN\r\n").map_err(io)?;
        Ok(Conn { stream, serial: 0 })
    }

    /// Call `member` and wait for its return (or its error, as the reason).
    fn call(
        &mut self,
        destination: &str,
        path: &str,
        interface: &str,
        member: &str,
        signature: &str,
        body: &[u8],
    ) -> Result<Answer, String> {
        self.serial += 1;
        let serial = self.serial;
        let message = method_call(
            serial,
            destination,
            path,
            interface,
            member,
            signature,
            body,
        );
        self.stream.get_mut().write_all(&message).map_err(io)?;
        for _ in 0..MAX_READS {
            let m = self.read()?;
            if m.reply_serial != Some(serial) {
                continue;
            }
            return match m.kind {
                METHOD_RETURN => Ok(Answer {
                    body: m.body,
                    little: m.little,
                }),
                ERROR => {
                    let text = if m.signature.starts_with('s') {
                        Reader::new(&m.body, m.little).string().unwrap_or_default()
                    } else {
                        String::new()
                    };
                    Err(format!(
                        "D-Bus {member}: {}: {text}",
                        m.error_name.unwrap_or_default()
                    ))
                }
                _ => continue,
            };
        }
        Err(format!(
            "D-Bus {member}: no answer among {MAX_READS} messages"
        ))
    }

    /// Read one whole message.
    fn read(&mut self) -> Result<Message, String> {
        let mut fixed = [0u8; 16];
        self.stream.read_exact(&mut fixed).map_err(io)?;
        let little = match fixed[0] {
            b'l' => true,
            b'B' => false,
            other => return Err(format!("not a D-Bus message (byte order {other:#x})")),
        };
        let word = |at: usize| {
            let b = [fixed[at], fixed[at + 1], fixed[at + 2], fixed[at + 3]];
            if little {
                u32::from_le_bytes(b)
            } else {
                u32::from_be_bytes(b)
            }
        };
        let (body_len, fields_len) = (word(4) as usize, word(12) as usize);
        let padded = fields_len.div_ceil(8) * 8;
        if body_len > MAX_MESSAGE || padded > MAX_MESSAGE {
            return Err(format!(
                "a D-Bus message of {body_len} + {fields_len} bytes is too large"
            ));
        }
        let mut fields = vec![0u8; padded];
        self.stream.read_exact(&mut fields).map_err(io)?;
        let mut body = vec![0u8; body_len];
        self.stream.read_exact(&mut body).map_err(io)?;
        // The fields start at offset 16, a multiple of 8: aligning within them is aligning
        // within the message.
        let mut m = Message {
            kind: fixed[1],
            little,
            reply_serial: None,
            error_name: None,
            signature: String::new(),
            body,
        };
        let mut r = Reader::new(&fields[..fields_len], little);
        while r.pos < fields_len {
            r.align(8);
            let code = r.byte()?;
            let sig = r.signature()?;
            match (code, sig.as_str()) {
                (4, "s") => m.error_name = Some(r.string()?),
                (5, "u") => m.reply_serial = Some(r.u32()?),
                (8, "g") => m.signature = r.signature()?,
                (_, "s" | "o") => {
                    r.string()?;
                }
                (_, "g") => {
                    r.signature()?;
                }
                (_, "u") => {
                    r.u32()?;
                }
                (_, other) => return Err(format!("a header field of type `{other}`")),
            }
        }
        Ok(m)
    }
}

fn io(e: std::io::Error) -> String {
    e.to_string()
}

/// Connect to one address: `unix:path=…` or `unix:abstract=…` (values %-escaped).
fn connect(address: &str) -> Result<UnixStream, String> {
    let Some(params) = address.strip_prefix("unix:") else {
        return Err("only unix: addresses are supported".into());
    };
    for kv in params.split(',') {
        let Some((k, v)) = kv.split_once('=') else {
            continue;
        };
        let v = unescape(v)?;
        match k {
            "path" => return UnixStream::connect(Path::new(&v)).map_err(io),
            "abstract" => {
                use std::os::linux::net::SocketAddrExt;
                let a =
                    std::os::unix::net::SocketAddr::from_abstract_name(v.as_bytes()).map_err(io)?;
                return UnixStream::connect_addr(&a).map_err(io);
            }
            _ => {}
        }
    }
    Err("a unix: address without path= or abstract=".into())
}

/// A D-Bus address value: `%XX` escapes undone.
fn unescape(v: &str) -> Result<String, String> {
    let b = v.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = v.get(i + 1..i + 3).ok_or("a broken %-escape")?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| "a broken %-escape")?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "an address that is not UTF-8".into())
}

const METHOD_CALL: u8 = 1;
const METHOD_RETURN: u8 = 2;
const ERROR: u8 = 3;

struct Message {
    kind: u8,
    little: bool,
    reply_serial: Option<u32>,
    error_name: Option<String>,
    signature: String,
    body: Vec<u8>,
}

/// A whole method call, little-endian: the fixed header, the fields (path, interface, member,
/// destination and the body's signature when there is a body), padding, the body.
fn method_call(
    serial: u32,
    destination: &str,
    path: &str,
    interface: &str,
    member: &str,
    signature: &str,
    body: &[u8],
) -> Vec<u8> {
    let mut w = Writer::default();
    w.byte(b'l');
    w.byte(METHOD_CALL);
    w.byte(0);
    w.byte(1);
    w.u32(u32::try_from(body.len()).unwrap_or(u32::MAX));
    w.u32(serial);
    w.array(8, |w| {
        w.field(1, "o", |w| w.string(path));
        w.field(2, "s", |w| w.string(interface));
        w.field(3, "s", |w| w.string(member));
        w.field(6, "s", |w| w.string(destination));
        if !signature.is_empty() {
            w.field(8, "g", |w| w.signature(signature));
        }
    });
    w.pad(8);
    w.buf.extend_from_slice(body);
    w.buf
}

/// Marshals little-endian values, each aligned to its size from the start of `buf` (a body
/// starts at a multiple of 8, so aligning within it is aligning within the message).
#[derive(Default)]
struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    fn pad(&mut self, to: usize) {
        while !self.buf.len().is_multiple_of(to) {
            self.buf.push(0);
        }
    }

    fn byte(&mut self, b: u8) {
        self.buf.push(b);
    }

    fn u32(&mut self, v: u32) {
        self.pad(4);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    fn i32(&mut self, v: i32) {
        self.pad(4);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    fn string(&mut self, s: &str) {
        // A string holds no NUL; one from a thread would end it early, so it is dropped.
        let s: String = s.chars().filter(|c| *c != '\0').collect();
        self.u32(u32::try_from(s.len()).unwrap_or(u32::MAX));
        self.buf.extend_from_slice(s.as_bytes());
        self.buf.push(0);
    }

    fn signature(&mut self, s: &str) {
        self.byte(u8::try_from(s.len()).unwrap_or(u8::MAX));
        self.buf.extend_from_slice(s.as_bytes());
        self.buf.push(0);
    }

    /// An array whose elements align to `align`; its length excludes the padding before the
    /// first element.
    fn array(&mut self, align: usize, elements: impl FnOnce(&mut Writer)) {
        self.u32(0);
        let at = self.buf.len() - 4;
        self.pad(align);
        let start = self.buf.len();
        elements(self);
        let len = u32::try_from(self.buf.len() - start).unwrap_or(u32::MAX);
        self.buf[at..at + 4].copy_from_slice(&len.to_le_bytes());
    }

    /// A header field: the struct `(y v)`.
    fn field(&mut self, code: u8, sig: &str, value: impl FnOnce(&mut Writer)) {
        self.pad(8);
        self.byte(code);
        self.signature(sig);
        value(self);
    }

    /// A hint: the dict entry `{s v}`.
    fn dict_entry(&mut self, key: &str, sig: &str, value: impl FnOnce(&mut Writer)) {
        self.pad(8);
        self.string(key);
        self.signature(sig);
        value(self);
    }
}

/// Reads values of either byte order, aligned from the start of its slice.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    little: bool,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8], little: bool) -> Reader<'a> {
        Reader {
            buf,
            pos: 0,
            little,
        }
    }

    fn align(&mut self, to: usize) {
        self.pos = self.pos.div_ceil(to) * to;
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.pos.checked_add(n).filter(|e| *e <= self.buf.len());
        let end = end.ok_or("a D-Bus message ends early")?;
        let out = &self.buf[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn byte(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32, String> {
        self.align(4);
        let b: [u8; 4] = self.take(4)?.try_into().map_err(|_| "short")?;
        Ok(if self.little {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        })
    }

    fn string(&mut self) -> Result<String, String> {
        let len = self.u32()? as usize;
        let s = String::from_utf8_lossy(self.take(len)?).into_owned();
        self.take(1)?;
        Ok(s)
    }

    fn signature(&mut self) -> Result<String, String> {
        let len = self.byte()? as usize;
        let s = String::from_utf8_lossy(self.take(len)?).into_owned();
        self.take(1)?;
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_method_call_is_laid_out_as_the_specification_says() {
        // Hello: serial 1, no body, so no signature field.
        let m = method_call(1, BUS_NAME, BUS_PATH, BUS_NAME, "Hello", "", &[]);
        assert_eq!(&m[..4], b"l\x01\x00\x01");
        assert_eq!(&m[4..8], &0u32.to_le_bytes(), "no body");
        assert_eq!(&m[8..12], &1u32.to_le_bytes(), "serial");
        let fields_len = u32::from_le_bytes(m[12..16].try_into().unwrap()) as usize;
        assert_eq!(m.len(), (16 + fields_len).div_ceil(8) * 8);
        // The first field: code 1, signature "o", the path as a string at offset 20.
        assert_eq!(&m[16..20], b"\x01\x01o\x00");
        assert_eq!(&m[20..24], &(BUS_PATH.len() as u32).to_le_bytes());
        assert_eq!(&m[24..24 + BUS_PATH.len()], BUS_PATH.as_bytes());
    }

    #[test]
    fn an_array_length_leaves_out_the_padding_before_its_first_element() {
        let mut w = Writer::default();
        w.array(8, |w| w.dict_entry("k", "y", |w| w.byte(7)));
        // length (4) + padding to 8 (4) + key "k" (4 + 1 + 1) + signature (3) + byte (1)
        assert_eq!(&w.buf[..4], &10u32.to_le_bytes());
        assert_eq!(w.buf.len(), 18);
        let mut empty = Writer::default();
        empty.byte(0);
        empty.array(8, |_| {});
        assert_eq!(&empty.buf[4..8], &0u32.to_le_bytes());
        assert_eq!(empty.buf.len(), 8, "the padding is written even when empty");
    }

    #[test]
    fn addresses_are_unescaped_and_only_unix_ones_are_tried() {
        assert_eq!(unescape("/tmp/a%2cb%3d").unwrap(), "/tmp/a,b=");
        assert!(unescape("%zz").is_err());
        assert!(connect("tcp:host=localhost,port=1").is_err());
        let e = Conn::open("unix:path=/nonexistent/yoi-bus;tcp:host=x")
            .err()
            .unwrap();
        assert!(
            e.contains("/nonexistent/yoi-bus") && e.contains("tcp:"),
            "{e}"
        );
    }

    #[test]
    fn strings_read_back_in_either_byte_order() {
        let mut w = Writer::default();
        w.array(4, |w| {
            w.string("body");
            w.string("body-markup");
        });
        assert_eq!(read_strings(&w.buf, true), ["body", "body-markup"]);
        let big = [0, 0, 0, 8, 0, 0, 0, 3, b'a', b'b', b'c', 0];
        assert_eq!(read_strings(&big, false), ["abc"]);
    }
}
