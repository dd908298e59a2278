//! The mutator: seeds first, verbatim, then each input is a seed (or an earlier mutant the
//! parser accepted) with a few stacked edits. The edits know the shape of text formats —
//! lines, quoted strings, numbers, brackets, YAML anchors and tags, the target's own keys and
//! values — besides the byte-level ones (flips, inserts, deletes, duplicated ranges, splices,
//! truncation, invalid UTF-8). Everything is drawn from one seeded [`Rng`], so a seed and an
//! input number name an input exactly.

use crate::merge_corpus::Rng;

/// Inputs never grow past this (the formats' own size limits are smaller or equal).
pub const MAX_LEN: usize = 128 * 1024;
/// Accepted mutants kept as bases for further mutation.
const POOL: usize = 256;
/// Accepted mutants longer than this are not kept (they make every later edit slower).
const POOL_MAX_LEN: usize = 16 * 1024;

/// Tokens every target gets: the separators of our formats, quoting and escaping, line ends,
/// a BOM, NUL, brackets, YAML anchors, aliases and tags, odd numbers, and bytes that are not
/// UTF-8 or are multibyte.
const COMMON: &[&[u8]] = &[
    b"---",
    b"---\n",
    b"\n---\n",
    b"<!-- event:",
    b"<!-- event: comment -->",
    b"-->",
    b"<!--",
    b"\"",
    b"\\",
    b"\\\"",
    b":",
    b": ",
    b"\n",
    b"\r\n",
    b"\r",
    "\u{feff}".as_bytes(),
    b"\0",
    b"[[[[",
    b"{{{{",
    b"]]]]",
    b"}}}}",
    b"[]",
    b"{}",
    b"&a ",
    b"*a",
    b"<<: *a\n",
    b"!!binary ",
    b"!!str ",
    b"!!int ",
    b"!!map ",
    b"!<tag:yaml.org,2002:str> ",
    b"%YAML 1.2\n",
    b"? ",
    b"- ",
    b"|\n",
    b">-\n",
    b"#",
    b"'",
    b"''",
    b"`",
    b"```",
    b"## ",
    b"\t",
    b" ",
    b",",
    b"=",
    b"null",
    b"true",
    b"false",
    b"~",
    b"0",
    b"-0",
    b"-1",
    b"1e999",
    b"-1e-999",
    b"18446744073709551615",
    b"18446744073709551616",
    b"-9223372036854775809",
    b"340282366920938463463374607431768211456",
    b"0x7fffffffffffffff",
    b"NaN",
    b"inf",
    b"\\u0000",
    b"\\ud800",
    b"\\uDFFF\\uD800",
    b"\\x",
    b"\xff",
    b"\xfe",
    b"\xc3",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"\xc0\x80",
    b"\xe2\x82",
    "é".as_bytes(),
    "日本語".as_bytes(),
    "🦀".as_bytes(),
    "\u{202e}".as_bytes(),
    "\u{200b}".as_bytes(),
    "e\u{301}".as_bytes(),
    "\u{2028}".as_bytes(),
    "\u{85}".as_bytes(),
    "\u{10ffff}".as_bytes(),
];

/// A YAML document whose aliases expand to 9^6 strings ("billion laughs").
const LAUGHS: &[u8] =
    b"a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: [*f,*f,*f,*f,*f,*f,*f,*f,*f]
";

const NUMBERS: &[&[u8]] = &[
    b"0",
    b"1",
    b"-1",
    b"127",
    b"128",
    b"255",
    b"256",
    b"65535",
    b"4294967295",
    b"4294967296",
    b"9223372036854775807",
    b"9223372036854775808",
    b"-9223372036854775808",
    b"18446744073709551616",
    b"99999999999999999999999999999999999999999",
    b"1.5",
    b"1e308",
    b"1e309",
    b"-0.0",
    b"00001",
];

const DEPTHS: &[usize] = &[2, 10, 64, 127, 128, 129, 200, 1_000, 5_000, 20_000];

/// The input generator of one target's run.
pub struct Mutator {
    rng: Rng,
    seeds: Vec<Vec<u8>>,
    pool: Vec<Vec<u8>>,
    pool_next: usize,
    dict: Vec<&'static [u8]>,
    mutant: bool,
}

impl Mutator {
    pub fn new(seed: u64, seeds: Vec<Vec<u8>>, dict: &'static [&'static str]) -> Mutator {
        let mut all: Vec<&'static [u8]> = dict.iter().map(|s| s.as_bytes()).collect();
        all.extend_from_slice(COMMON);
        Mutator {
            rng: Rng::new(seed),
            seeds,
            pool: Vec::new(),
            pool_next: 0,
            dict: all,
            mutant: false,
        }
    }

    /// Input number `n` into `out`: the seeds in order, then mutants.
    pub fn next_input(&mut self, n: u64, out: &mut Vec<u8>) {
        out.clear();
        if (n as usize) < self.seeds.len() {
            out.extend_from_slice(&self.seeds[n as usize]);
            self.mutant = false;
            return;
        }
        self.mutant = true;
        let base = if !self.pool.is_empty() && self.rng.below(2) == 0 {
            &self.pool[self.rng.below(self.pool.len())]
        } else {
            &self.seeds[self.rng.below(self.seeds.len())]
        };
        out.extend_from_slice(base);
        let edits = match self.rng.below(8) {
            0..=3 => 1,
            4 | 5 => 2,
            6 => 3 + self.rng.below(3),
            _ => 6 + self.rng.below(10),
        };
        for _ in 0..edits {
            self.edit(out);
        }
        out.truncate(MAX_LEN);
    }

    /// Remember an accepted mutant as a base for later ones.
    pub fn keep(&mut self, input: &[u8]) {
        if !self.mutant || input.len() > POOL_MAX_LEN {
            return;
        }
        if self.pool.len() < POOL {
            self.pool.push(input.to_vec());
        } else {
            self.pool[self.pool_next].clear();
            self.pool[self.pool_next].extend_from_slice(input);
            self.pool_next = (self.pool_next + 1) % POOL;
        }
    }

    fn pos(&mut self, out: &[u8]) -> usize {
        self.rng.below(out.len() + 1)
    }

    fn token(&mut self) -> &'static [u8] {
        self.dict[self.rng.below(self.dict.len())]
    }

    fn edit(&mut self, out: &mut Vec<u8>) {
        match self.rng.below(20) {
            // Byte level.
            0 if !out.is_empty() => {
                let i = self.rng.below(out.len());
                out[i] ^= 1 << self.rng.below(8);
            }
            1 if !out.is_empty() => {
                let i = self.rng.below(out.len());
                out[i] = match self.rng.below(4) {
                    0 => self.rng.next_u64() as u8,
                    1 => b"\0\n\r\t \"'\\:-#{}[]<>!&*|"[self.rng.below(21)],
                    2 => 0x80 | self.rng.below(0x80) as u8,
                    _ => out[i].wrapping_add(1),
                };
            }
            2 => {
                let (a, b) = range(&mut self.rng, out);
                out.drain(a..b);
            }
            3 => {
                let (a, b) = range(&mut self.rng, out);
                let copy = out[a..b].to_vec();
                let at = self.pos(out);
                splice_in(out, at, &copy);
            }
            4 => {
                let n = self.rng.below(out.len() + 1);
                out.truncate(n);
            }
            5 => {
                let other = &self.seeds[self.rng.below(self.seeds.len())];
                let cut = self.rng.below(out.len() + 1);
                let from = self.rng.below(other.len() + 1);
                out.truncate(cut);
                out.extend_from_slice(&other[from..]);
            }
            // Tokens, anywhere or at the start of a line.
            6..=8 => {
                let t = self.token();
                let at = self.pos(out);
                splice_in(out, at, t);
            }
            9 => {
                let t = self.token();
                let at = self.line_start(out);
                splice_in(out, at, t);
            }
            10 => self.replace_token(out),
            11 => self.replace_quoted(out),
            12 => self.replace_number(out),
            13 => self.line_edit(out),
            // Size and depth.
            14 => {
                let unit: &[u8] = if self.rng.below(2) == 0 {
                    self.token()
                } else {
                    &b"a \n\"\\-[{:#"[self.rng.below(10)..][..1]
                };
                let count = [16, 256, 4_096, 65_536][self.rng.below(4)];
                let run: Vec<u8> = unit.iter().copied().cycle().take(count).collect();
                let at = self.pos(out);
                splice_in(out, at, &run);
            }
            15 => {
                let depth = DEPTHS[self.rng.below(DEPTHS.len())];
                let (open, close): (&[u8], &[u8]) = match self.rng.below(4) {
                    0 => (b"[", b"]"),
                    1 => (b"{\"a\":", b"}"),
                    2 => (b"{a: ", b"}"),
                    _ => (b"[{", b"}]"),
                };
                let mut nest = open.repeat(depth);
                if self.rng.below(2) == 0 {
                    nest.extend(close.repeat(depth));
                }
                let at = self.pos(out);
                splice_in(out, at, &nest);
            }
            16 => {
                // Deep block nesting, as YAML or Markdown lists write it.
                let depth = DEPTHS[self.rng.below(DEPTHS.len())].min(2_000);
                let mut nest = Vec::new();
                for d in 0..depth {
                    nest.extend(std::iter::repeat_n(b' ', d));
                    nest.extend_from_slice(if d % 2 == 0 { b"- k:\n" } else { b"k:\n" });
                }
                let at = self.line_start(out);
                splice_in(out, at, &nest);
            }
            17 => {
                let at = self.line_start(out);
                splice_in(out, at, LAUGHS);
            }
            18 => {
                // An anchor on one value and aliases of it elsewhere.
                let anchor: &[u8] = [&b"&a "[..], b"&x ", b"&a !!binary "][self.rng.below(3)];
                let at = self.pos(out);
                splice_in(out, at, anchor);
                let alias: &[u8] = [&b"*a"[..], b"*x", b"*missing", b"<<: *a\n"][self.rng.below(4)];
                let at = self.pos(out);
                splice_in(out, at, alias);
            }
            _ => {
                let other = &self.seeds[self.rng.below(self.seeds.len())];
                let (a, b) = range(&mut self.rng, other);
                let piece = other[a..b].to_vec();
                let at = self.pos(out);
                splice_in(out, at, &piece);
            }
        }
    }

    /// The start of a random line of `out` (or its end).
    fn line_start(&mut self, out: &[u8]) -> usize {
        let at = self.pos(out);
        match out[..at].iter().rposition(|&b| b == b'\n') {
            Some(i) => i + 1,
            None => 0,
        }
    }

    /// Replace one occurrence of a dictionary token by another token.
    fn replace_token(&mut self, out: &mut Vec<u8>) {
        for _ in 0..4 {
            let t = self.token();
            let from = self.pos(out);
            if let Some(i) = find(&out[from..], t).map(|i| i + from) {
                let with = self.token();
                out.splice(i..i + t.len(), with.iter().copied());
                return;
            }
        }
    }

    /// Replace the inside of a quoted string (`"…"` or `'…'`) by a token, a run or nothing.
    fn replace_quoted(&mut self, out: &mut Vec<u8>) {
        let from = self.pos(out);
        let quote = if self.rng.below(3) == 0 { b'\'' } else { b'"' };
        let Some(open) = out[from..]
            .iter()
            .position(|&b| b == quote)
            .map(|i| i + from)
        else {
            return;
        };
        let Some(close) = out[open + 1..].iter().position(|&b| b == quote) else {
            return;
        };
        let close = open + 1 + close;
        let with: Vec<u8> = match self.rng.below(4) {
            0 => Vec::new(),
            1 => b"x".repeat([1_025, 16_385, 70_000][self.rng.below(3)]),
            _ => self.token().to_vec(),
        };
        out.splice(open + 1..close, with);
    }

    /// Replace a run of digits by an interesting number.
    fn replace_number(&mut self, out: &mut Vec<u8>) {
        let from = self.pos(out);
        let Some(start) = out[from..]
            .iter()
            .position(u8::is_ascii_digit)
            .map(|i| i + from)
        else {
            return;
        };
        let len = out[start..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        let with = NUMBERS[self.rng.below(NUMBERS.len())];
        out.splice(start..start + len, with.iter().copied());
    }

    /// Delete, duplicate or swap whole lines.
    fn line_edit(&mut self, out: &mut Vec<u8>) {
        let mut starts = vec![0];
        starts.extend(
            out.iter()
                .enumerate()
                .filter(|(_, &b)| b == b'\n')
                .map(|(i, _)| i + 1),
        );
        if *starts.last().unwrap() < out.len() {
            starts.push(out.len());
        }
        if starts.len() < 2 {
            return;
        }
        let lines = starts.len() - 1;
        let a = self.rng.below(lines);
        let line_a = out[starts[a]..starts[a + 1]].to_vec();
        match self.rng.below(3) {
            0 => {
                out.drain(starts[a]..starts[a + 1]);
            }
            1 => {
                let at = starts[self.rng.below(starts.len())];
                splice_in(out, at, &line_a);
            }
            _ => {
                let b = self.rng.below(lines);
                if a != b {
                    let (lo, hi) = (a.min(b), a.max(b));
                    let mut swapped = out[..starts[lo]].to_vec();
                    swapped.extend_from_slice(&out[starts[hi]..starts[hi + 1]]);
                    swapped.extend_from_slice(&out[starts[lo + 1]..starts[hi]]);
                    swapped.extend_from_slice(&out[starts[lo]..starts[lo + 1]]);
                    swapped.extend_from_slice(&out[starts[hi + 1]..]);
                    *out = swapped;
                }
            }
        }
    }
}

/// A range `start..end` of `out` (empty when `out` is), mostly short.
fn range(rng: &mut Rng, out: &[u8]) -> (usize, usize) {
    if out.is_empty() {
        return (0, 0);
    }
    let start = rng.below(out.len());
    let max = out.len() - start;
    let len = if rng.below(4) == 0 {
        1 + rng.below(max)
    } else {
        1 + rng.below(max.min(16))
    };
    (start, start + len)
}

fn splice_in(out: &mut Vec<u8>, at: usize, bytes: &[u8]) {
    if out.len() + bytes.len() > MAX_LEN {
        return;
    }
    out.splice(at..at, bytes.iter().copied());
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || needle.len() > hay.len() {
        return None;
    }
    hay.windows(needle.len()).position(|w| w == needle)
}
