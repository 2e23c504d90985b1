//! The resources under construction: a small ordered JSON tree that knows which array item each of the guide's
//! instance numbers (`identifier[2]`) and v2 repetitions went to, written out as FHIR JSON directly.
//!
//! The tree lives in an arena ([`bumpalo::Bump`]) for one conversion: an ORU^R01 builds a few hundred objects,
//! arrays and strings, which the arena hands out without a call to the allocator each and frees at once when
//! the conversion ends (the tree is never dropped node by node).

use bumpalo::Bump;
use bumpalo::collections::Vec as BVec;

/// A member name or string value: most come from the compiled maps and the FHIR definitions (static, not
/// copied), the rest from the message or built (copied into the arena).
pub(crate) type Text<'b> = &'b str;

/// A JSON value being built.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Node<'b> {
    Obj(BVec<'b, (Text<'b>, Node<'b>)>),
    /// Items with the slot tag that placed them (see [`Node::slot`]).
    Arr(BVec<'b, (u64, Node<'b>)>),
    Str(Text<'b>),
    /// A number, written as its lexical form.
    Num(Text<'b>),
    Bool(bool),
}

impl<'b> Node<'b> {
    /// An empty object, with room for a few members: the arena's vectors grow from one item by doubling, and
    /// each growth copies the vector (it is rarely the arena's last allocation), so a resource's ten members
    /// would be copied five times.
    pub(crate) fn obj(bump: &'b Bump) -> Node<'b> {
        Node::Obj(BVec::with_capacity_in(4, bump))
    }

    /// An empty object without room for members: a place held for a moment (`mem::replace`), or a member about
    /// to be given its value.
    pub(crate) fn placeholder(bump: &'b Bump) -> Node<'b> {
        Node::Obj(BVec::new_in(bump))
    }

    /// An empty array, with room for two items (most hold one: a coding, an identifier, a name).
    pub(crate) fn arr(bump: &'b Bump) -> Node<'b> {
        Node::Arr(BVec::with_capacity_in(2, bump))
    }

    /// The member `name` of an object, created by `make` when missing. `None` when this is not an object.
    pub(crate) fn member(
        &mut self,
        name: &'static str,
        make: impl FnOnce() -> Node<'b>,
    ) -> Option<&mut Node<'b>> {
        let Node::Obj(fields) = self else { return None };
        let i = match fields.iter().position(|(k, _)| same(k, name)) {
            Some(i) => i,
            None => {
                fields.push((name, make()));
                fields.len() - 1
            }
        };
        Some(&mut fields[i].1)
    }

    /// The array item tagged `tag`, appended (built by `make`) when no item has it, found through `long` when the
    /// array is long. `None` when this is not an array.
    pub(crate) fn slot_in(
        &mut self,
        long: &mut LongArrays,
        tag: u64,
        make: impl FnOnce() -> Node<'b>,
    ) -> Option<&mut Node<'b>> {
        let Node::Arr(items) = self else { return None };
        let i = match long.find(items, tag) {
            Some(i) => i,
            None => {
                long.push(items, tag, make());
                items.len() - 1
            }
        };
        Some(&mut items[i].1)
    }

    /// Sets member `name` unless it is already set (the first row to write an element wins, as the guide's
    /// alternatives are listed in order of preference). Returns whether it was set.
    pub(crate) fn set_if_absent(&mut self, name: Text<'b>, value: Node<'b>) -> bool {
        let Node::Obj(fields) = self else {
            return false;
        };
        if fields.iter().any(|(k, _)| *k == name) {
            return false;
        }
        fields.push((name, value));
        true
    }

    /// A string member's value, as the tree holds it (the arena's or a static string: it may be kept while the
    /// tree changes).
    pub(crate) fn get_str(&self, name: &str) -> Option<Text<'b>> {
        let Node::Obj(fields) = self else { return None };
        fields
            .iter()
            .find(|(k, _)| *k == name)
            .and_then(|(_, v)| match v {
                Node::Str(s) => Some(*s),
                _ => None,
            })
    }

    /// Empty objects and arrays are not FHIR: removes them, bottom up. Returns whether this node is empty.
    pub(crate) fn prune(&mut self) -> bool {
        // A leaf is told in place, without a call.
        fn child(v: &mut Node<'_>) -> bool {
            if v.is_container() {
                v.prune()
            } else {
                v.is_empty()
            }
        }
        match self {
            Node::Obj(fields) => clean_list(fields, |_, v| child(v)),
            Node::Arr(items) => clean_list(items, |_, v| child(v)),
            leaf => leaf.is_empty(),
        }
    }

    /// Whether the node is an object or an array: what a walk of the tree goes into.
    pub(crate) fn is_container(&self) -> bool {
        matches!(self, Node::Obj(_) | Node::Arr(_))
    }

    /// Whether the node is an empty object, array or string (what [`Node::prune`] removes, once its children are
    /// pruned).
    pub(crate) fn is_empty(&self) -> bool {
        match self {
            Node::Obj(fields) => fields.is_empty(),
            Node::Arr(items) => items.is_empty(),
            Node::Str(s) => s.is_empty(),
            Node::Num(_) | Node::Bool(_) => false,
        }
    }

    /// Writes the node as JSON (into bytes, or straight into a hash: see [`Sink`]).
    pub(crate) fn write_json<S: Sink>(&self, out: &mut S) {
        match self {
            Node::Obj(fields) => {
                out.push(b'{');
                for (i, (k, v)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    // Member names are FHIR element names and the converter's own (`resourceType`, `_status`):
                    // nothing in them needs an escape.
                    debug_assert!(k.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_'));
                    out.push(b'"');
                    out.extend_from_slice(k.as_bytes());
                    out.extend_from_slice(b"\":");
                    v.write_item(out);
                }
                out.push(b'}');
            }
            Node::Arr(items) => {
                out.push(b'[');
                for (i, (_, v)) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    v.write_item(out);
                }
                out.push(b']');
            }
            leaf => leaf.write_item(out),
        }
    }

    /// A member's value or an array's item: a leaf written in place, a container by a call (most of a tree's nodes
    /// are leaves, and a call for each cost more than writing it).
    #[inline(always)]
    fn write_item<S: Sink>(&self, out: &mut S) {
        match self {
            Node::Str(s) => write_str(s, out),
            Node::Num(n) => out.extend_from_slice(n.as_bytes()),
            Node::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
            container => container.write_json(out),
        }
    }
}

/// Cleans each member of `list` in place (`clean` returns whether the member came out empty), then removes the
/// empty ones, rebuilding the list only when there is one (most lists have none: `retain` over every list cost more
/// than the walk itself). Returns whether the list is empty.
pub(crate) fn clean_list<'b, K>(
    list: &mut BVec<'b, (K, Node<'b>)>,
    mut clean: impl FnMut(&K, &mut Node<'b>) -> bool,
) -> bool {
    let mut empty = false;
    for (k, v) in list.iter_mut() {
        empty |= clean(k, v);
    }
    if empty {
        list.retain(|(_, v)| !v.is_empty());
    }
    list.is_empty()
}

/// Arrays are short (an identifier or two, a few codings) and scanned for an item's tag; a field repeated
/// thousands of times makes one long, and scanning it for each repetition was quadratic (400,000 repetitions of
/// PID-3 took 54 s). Past [`LONG`] items an array's tags are indexed here, for all the long arrays of one
/// conversion together: a tag's index is checked against the array asked (two arrays may share a tag, and the
/// index then names the other's item: the array is scanned), and a tag not indexed is in no long array.
#[derive(Default)]
pub(crate) struct LongArrays {
    index: std::collections::HashMap<u64, u32, crate::maps::Fnv>,
}

/// The length from which an array's tags are indexed.
const LONG: usize = 32;

impl LongArrays {
    /// The index of the item tagged `tag` in `items`.
    pub(crate) fn find(&self, items: &[(u64, Node<'_>)], tag: u64) -> Option<usize> {
        if items.len() < LONG {
            return items.iter().position(|(t, _)| *t == tag);
        }
        let i = *self.index.get(&tag)? as usize;
        if items.get(i).is_some_and(|(t, _)| *t == tag) {
            return Some(i);
        }
        items.iter().position(|(t, _)| *t == tag)
    }

    /// Appends an item tagged `tag` (which `items` does not have).
    pub(crate) fn push<'b>(
        &mut self,
        items: &mut BVec<'b, (u64, Node<'b>)>,
        tag: u64,
        node: Node<'b>,
    ) {
        items.push((tag, node));
        match items.len() {
            n if n < LONG => {}
            // The array just became long: all its tags.
            LONG => {
                for (i, (t, _)) in items.iter().enumerate() {
                    self.index.insert(*t, i as u32);
                }
            }
            n => {
                self.index.insert(tag, (n - 1) as u32);
            }
        }
    }
}

/// Whether a member name is `name`: most names are the same static string, compared by address first, the
/// others (a few bytes) in place rather than by `memcmp`.
pub(crate) fn same(k: &str, name: &str) -> bool {
    k.len() == name.len()
        && (k.as_ptr() == name.as_ptr() || k.bytes().zip(name.bytes()).all(|(a, b)| a == b))
}

/// Where JSON is written: bytes, or a hash of the bytes (a resource's content hashed into its id without writing
/// its JSON first).
pub(crate) trait Sink {
    fn push(&mut self, b: u8);
    fn extend_from_slice(&mut self, b: &[u8]);
}

impl Sink for Vec<u8> {
    fn push(&mut self, b: u8) {
        Vec::push(self, b);
    }
    fn extend_from_slice(&mut self, b: &[u8]) {
        Vec::extend_from_slice(self, b);
    }
}

/// The hash of the bytes written: the same as [`Fnv::bytes`] of the whole JSON.
impl Sink for Fnv {
    fn push(&mut self, b: u8) {
        *self = self.bytes(&[b]);
    }
    fn extend_from_slice(&mut self, b: &[u8]) {
        *self = self.bytes(b);
    }
}

/// A JSON string literal.
pub(crate) fn write_str<S: Sink>(s: &str, out: &mut S) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    // Most strings need no escape: runs without one are copied whole.
    while let Some(n) = escape_at(&bytes[start..]) {
        let i = start + n;
        out.extend_from_slice(&bytes[start..i]);
        let c = bytes[i];
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(c >> 4)]);
                out.push(HEX[usize::from(c & 0xf)]);
            }
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// [`escape_at`] for a string of 16 bytes or more, 16 bytes at a time (SSE2), the last 16 overlapping the ones
/// before: the escape test cost about 4% of a conversion's instructions by words (most of the bytes written are in
/// the longer strings: references, ids, systems).
#[cfg(target_arch = "x86_64")]
#[inline]
fn escape_at_16(bytes: &[u8]) -> Option<usize> {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    let n = bytes.len();
    assert!(n >= 16);
    // One bit per byte of the 16 at `i` that needs an escape: `"`, `\`, or at most 0x1f (the unsigned maximum
    // with 0x1f is 0x1f).
    let mask = |i: usize| {
        debug_assert!(i + 16 <= n);
        // SAFETY: SSE2 is part of the x86_64 baseline, and the load reads the 16 bytes at `i`, inside `bytes`
        // (every caller's `i` is at most `n - 16`).
        unsafe {
            let v = _mm_loadu_si128(bytes.as_ptr().add(i).cast::<__m128i>());
            let low = _mm_set1_epi8(0x1f);
            let hit = _mm_or_si128(
                _mm_cmpeq_epi8(_mm_max_epu8(v, low), low),
                _mm_or_si128(
                    _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8)),
                    _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8)),
                ),
            );
            _mm_movemask_epi8(hit) as u32
        }
    };
    let mut i = 0;
    while i + 16 <= n {
        let m = mask(i);
        if m != 0 {
            return Some(i + m.trailing_zeros() as usize);
        }
        i += 16;
    }
    if i < n {
        // The bytes before `i` have no escape: the first bit set is at `i` or after.
        let m = mask(n - 16);
        if m != 0 {
            return Some(n - 16 + m.trailing_zeros() as usize);
        }
    }
    None
}

/// The bytes that need an escape in a JSON string: control characters, `"` and `\\`.
static ESCAPE: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        t[c] = c < 0x20 || c == b'"' as usize || c == b'\\' as usize;
        c += 1;
    }
    t
};

/// The first byte that needs an escape in a JSON string (a control character, `"` or `\\`). A string shorter than
/// a word is tested byte by byte, by table; a longer one eight bytes at a time (a word per step rather than three
/// comparisons per byte), the last word overlapping the one before it, so that no string of a word or more is walked
/// byte by byte unless it has such a byte; on x86_64 one of 16 bytes or more by [`escape_at_16`].
#[inline]
fn escape_at(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    /// Whether a byte of `w` needs an escape: below 0x20 (the classic `hasless` test, exact for "any"), or `"`
    /// or `\\` (`haszero` of the word xor the byte).
    fn any_escape(w: u64) -> bool {
        let less = w.wrapping_sub(ONES * 0x20) & !w & HIGH;
        let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
        less | zero(w ^ (ONES * u64::from(b'"'))) | zero(w ^ (ONES * u64::from(b'\\'))) != 0
    }
    let word = |i: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&bytes[i..i + 8]);
        u64::from_le_bytes(w)
    };
    let is_escape = |c: u8| ESCAPE[usize::from(c)];
    let n = bytes.len();
    #[cfg(target_arch = "x86_64")]
    if n >= 16 {
        return escape_at_16(bytes);
    }
    if n < 8 {
        // Shorter than a word: tested byte by byte (a padded copy would cost a call to `memcpy`).
        return bytes.iter().position(|&c| is_escape(c));
    }
    let mut i = 0;
    let mut found = false;
    while i + 8 <= n {
        if any_escape(word(i)) {
            found = true;
            break;
        }
        i += 8;
    }
    found = found || (i < n && any_escape(word(n - 8)));
    if !found {
        return None;
    }
    // The test has no false positive without a true one in the same word: found by bytes.
    bytes.iter().position(|&c| is_escape(c))
}

/// FNV-1a, 64 bits: slot tags and deterministic resource ids. Stable across runs and platforms (unlike the
/// standard library's hasher), which is what makes converting a message twice give the same Bundle.
pub(crate) fn fnv(parts: &[&[u8]]) -> u64 {
    let mut h = Fnv::new();
    for p in parts {
        h = h.part(p);
    }
    h.0
}

/// [`fnv`] step by step, so that a part can be fed in pieces (a label and its segment id) without joining them
/// first: `Fnv::new().bytes(a).bytes(b).end()` is `fnv(&[a + b])`.
#[derive(Clone, Copy)]
pub(crate) struct Fnv(pub(crate) u64);

impl Fnv {
    pub(crate) fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    /// Bytes of the current part.
    pub(crate) fn bytes(mut self, bytes: &[u8]) -> Fnv {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
        self
    }

    /// Ends the current part.
    pub(crate) fn end(mut self) -> Fnv {
        // A separator, so that ("ab","c") and ("a","bc") differ.
        self.0 ^= 0xff;
        self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        self
    }

    /// A whole part.
    pub(crate) fn part(self, bytes: &[u8]) -> Fnv {
        self.bytes(bytes).end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prunes_and_writes() {
        let bump = Bump::new();
        let mut n = Node::obj(&bump);
        n.member("a", || Node::arr(&bump))
            .and_then(|a| a.slot_in(&mut LongArrays::default(), 1, || Node::obj(&bump)))
            .and_then(|o| o.member("x", || Node::Str("q\"\u{1}")));
        n.member("empty", || Node::obj(&bump));
        assert!(!n.prune());
        let mut out = Vec::new();
        n.write_json(&mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"a":[{"x":"q\"\u0001"}]}"#
        );
        assert_ne!(fnv(&[b"ab", b"c"]), fnv(&[b"a", b"bc"]));
    }

    #[test]
    fn long_arrays_find_each_item_and_no_other() {
        let bump = Bump::new();
        let mut long = LongArrays::default();
        // Two arrays past the indexed length, sharing some tags (the index names one of them).
        let (mut a, mut b) = (BVec::new_in(&bump), BVec::new_in(&bump));
        for i in 0..1000u64 {
            long.push(&mut a, i * 7, Node::Num("1"));
            if i % 3 == 0 {
                long.push(&mut b, i * 7, Node::Num("2"));
            }
        }
        for i in 0..1000u64 {
            assert_eq!(long.find(&a, i * 7), Some(i as usize), "{i}");
            let in_b = (i % 3 == 0).then_some((i / 3) as usize);
            assert_eq!(long.find(&b, i * 7), in_b, "{i}");
            assert_eq!(long.find(&a, i * 7 + 1), None);
        }
        // A short array is scanned, whatever the index holds.
        let mut c = BVec::new_in(&bump);
        long.push(&mut c, 14, Node::Num("3"));
        assert_eq!(long.find(&c, 14), Some(0));
        assert_eq!(long.find(&c, 21), None);
    }

    #[test]
    fn finds_every_byte_that_needs_an_escape() {
        // Every position in and around a word and two 16-byte blocks, every byte value, alone and before a second
        // escape: the word and block tests agree with the byte test.
        for len in 0..40 {
            for at in 0..len {
                for c in 0..=255u8 {
                    let mut b = vec![b'a'; len];
                    b[at] = c;
                    let want = b.iter().position(|&x| x < 0x20 || x == b'"' || x == b'\\');
                    assert_eq!(escape_at(&b), want, "{len} {at} {c}");
                    if at + 1 < len {
                        b[len - 1] = b'"';
                        let want = b.iter().position(|&x| x < 0x20 || x == b'"' || x == b'\\');
                        assert_eq!(escape_at(&b), want, "{len} {at} {c} and a quote last");
                    }
                }
            }
        }
    }
}
