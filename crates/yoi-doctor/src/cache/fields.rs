//! The field encodings every part of the doctor cache file is built from: little-endian
//! integers, strings prefixed with their length as a `u32`, and optional strings behind a
//! one-byte tag (0 none, 1 some).
//!
//! [`Reader`] never panics and never reads past its slice: a field cut short, a length longer
//! than what is left, text that is not UTF-8 or an unknown tag gives `None`, which the callers
//! treat as "this entry (or file) is not to be believed". What the fields mean is not known
//! here; the header and index are `cache_file`'s, an entry's contents `entry_codec`'s and
//! `stamps`'.

/// A string, after its length.
pub(super) fn put_str(w: &mut Vec<u8>, s: &str) {
    w.extend_from_slice(&(s.len() as u32).to_le_bytes());
    w.extend_from_slice(s.as_bytes());
}

pub(super) fn put_opt(w: &mut Vec<u8>, s: Option<&str>) {
    match s {
        None => w.push(0),
        Some(s) => {
            w.push(1);
            put_str(w, s);
        }
    }
}

/// Reads what the `put_*` functions wrote; `None` at any short or malformed field.
pub(super) struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(super) fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes }
    }

    pub(super) fn rest(&self) -> &'a [u8] {
        self.bytes
    }

    pub(super) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.bytes.len() {
            return None;
        }
        let (head, tail) = self.bytes.split_at(n);
        self.bytes = tail;
        Some(head)
    }

    pub(super) fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    pub(super) fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    pub(super) fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    pub(super) fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }

    pub(super) fn str(&mut self) -> Option<&'a str> {
        std::str::from_utf8(self.bytes()?).ok()
    }

    pub(super) fn string(&mut self) -> Option<String> {
        self.str().map(str::to_string)
    }

    pub(super) fn opt(&mut self) -> Option<Option<&'a str>> {
        match self.u8()? {
            0 => Some(None),
            1 => Some(Some(self.str()?)),
            _ => None,
        }
    }
}
