//! Reading the index one span ahead of a blocking caller. Doctor compares each chunk of ticket
//! folders with the rows of its span of ids; the next span's rows are read on the index's
//! runtime while doctor reads the chunk's files, so the disk and the database work at once and
//! only one span's rows wait in memory.

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::{DbIndex, Span, SpanRows};
use yoi_store::StoreError;

/// The rows of a list of spans, in order, each read while the caller works on the one before.
/// Iterating waits for the next span's rows; it ends after the last span, or after the first
/// error (the last item).
#[derive(Debug)]
pub struct SpanReader {
    index: DbIndex,
    rows: mpsc::Receiver<Result<SpanRows, StoreError>>,
    reader: JoinHandle<()>,
}

impl DbIndex {
    /// Start reading the rows of `spans`, in order, one span ahead of the caller.
    pub fn read_ahead<'a>(&self, spans: impl IntoIterator<Item = Span<'a>>) -> SpanReader {
        let ends: Vec<(Option<String>, Option<String>)> = spans
            .into_iter()
            .map(|s| (s.from.map(str::to_string), s.until.map(str::to_string)))
            .collect();
        let (tx, rows) = mpsc::channel(1);
        let db = self.db.clone();
        let reader = self.spawn(async move {
            for (from, until) in &ends {
                let span = Span {
                    from: from.as_deref(),
                    until: until.as_deref(),
                };
                let rows = db.span_rows(span).await;
                let failed = rows.is_err();
                // A closed channel means the caller stopped early.
                if tx.send(rows).await.is_err() || failed {
                    return;
                }
            }
        });
        SpanReader {
            index: self.clone(),
            rows,
            reader,
        }
    }
}

impl Iterator for SpanReader {
    type Item = Result<SpanRows, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.index.run(self.rows.recv())
    }
}

impl SpanReader {
    /// Stop reading and wait for the reader to end. A panic in it is a bug worth reporting, so
    /// it goes on in the caller.
    pub fn finish(self) {
        let SpanReader {
            index,
            rows,
            reader,
        } = self;
        drop(rows);
        if let Err(e) = index.run(reader) {
            if e.is_panic() {
                std::panic::resume_unwind(e.into_panic());
            }
        }
    }
}
