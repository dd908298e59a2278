//! Printing: JSON for `--json`, aligned plain-text tables otherwise.

use std::io::Write;

use serde::Serialize;
use yoi_engine::store::Outcome;

pub fn json<T: Serialize>(value: &T) {
    // Written as it is serialized: a large report (doctor's, say) is never held as one string.
    // The writer is the buffer itself, not a `dyn Write`: serde_json writes a pretty report in
    // pieces of a few bytes, and each was a call through the vtable.
    let mut out = stdout_buffer();
    let written = serde_json::to_writer_pretty(&mut out, value)
        .map_err(std::io::Error::from)
        .and_then(|()| writeln!(out));
    finish(written, out);
}

fn stdout_buffer() -> std::io::BufWriter<std::io::StdoutLock<'static>> {
    std::io::BufWriter::with_capacity(64 * 1024, std::io::stdout().lock())
}

/// Flush the output. A reader that stopped reading (`| head`) wanted no more, so a closed pipe
/// ends the output quietly; any other failure is fatal.
fn finish(written: std::io::Result<()>, mut out: impl Write) {
    match written.and_then(|()| out.flush()) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        Err(e) => panic!("writing the output: {e}"),
    }
}

/// Write to standard output through one buffer (see [`finish`] for a reader that stops).
pub fn to_stdout(write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) {
    let mut out = stdout_buffer();
    let written = write(&mut out);
    finish(written, out);
}

/// A plain table with a header row; columns padded to their widest cell (in characters).
pub fn table(header: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut out = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                out.push_str(c);
            } else {
                out.push_str(c);
                out.push_str(&" ".repeat(widths[i] - c.chars().count() + 2));
            }
        }
        println!("{}", out.trim_end());
    };
    line(header.to_vec());
    for row in rows {
        line(row.iter().map(String::as_str).collect());
    }
}

/// The report of a mutation: one line, then one `note:` line per note (what the operation did
/// beyond the state change, e.g. with a cancelled ticket's worktree). `--json` carries the notes
/// in `notes`.
pub fn outcome(o: &Outcome, as_json: bool) {
    if let Some(e) = &o.index_error {
        eprintln!("warning: the files were written but the database index was not updated ({e}); it catches up on the next start, or run `yoi reindex`");
    }
    if as_json {
        return json(o);
    }
    let replay = if o.replayed { " (replayed)" } else { "" };
    match (o.from, o.to) {
        (Some(from), Some(to)) => println!("{}: {from} -> {to}{replay}", o.ticket),
        _ => println!("{}: {}{replay}", o.ticket, o.operation.replace('_', " ")),
    }
    for note in &o.notes {
        println!("note: {note}");
    }
}

/// Shorten text to `max` characters for a table cell.
pub fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        let mut s: String = text.chars().take(max.saturating_sub(1)).collect();
        s.push('…');
        s
    }
}
