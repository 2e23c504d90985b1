//! `cargo xtask codegen [--check]` (second half): compiles the HL7 v2 definitions 2.1-2.8.2 into the `hl7v2`
//! crate.
//!
//! Sources (read from `../shared`, checked by SHA-256):
//! - hl7apy (pinned commit): `hl7apy/v2_x/{messages,groups,segments,fields,datatypes,tables}.py`, Python dict
//!   literals, read by the small literal parser below (no Python at generation time): structures, groups, segment
//!   fields with cardinality, data types, table ids, table codes (2.3.1+).
//! - hl7-dictionary 1.0.1: `lib/<ver>/{segments,fields}.js` and `lib/tables.js` (JSON behind `var x =`): field
//!   and component lengths and readable names (2.1-2.7.1), table codes and their texts.
//! - HL7 Terminology 7.0.1: `CodeSystem-v2-NNNN.json` (table code displays) and `CodeSystem-v2-0354.json`
//!   (message structure -> trigger events).
//!
//! Corrections are in `xtask/hl7v2-errata.toml`, each with its reason. Output: one tab-separated file per version,
//! `tables.tsv` (each distinct table once, with the versions that have it), `events.tsv` (table 0354),
//! `disagreements.tsv` (hl7apy vs hl7-dictionary on field data type and repetition, 2.1-2.6), all in
//! `crates/hl7v2/src/generated/`; `crates/hl7v2/src/definitions.rs` documents the format and decodes it.

use crate::generated::sha256_hex;
use anyhow::{Context, Result, bail, ensure};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::io::Read;
use std::path::Path;

const HL7APY_FILE: &str = "data/hl7v2/definitions/hl7apy-0297526c.tar.gz";
const HL7APY_SHA256: &str = "167972ead29bdc460cffcc5a29c006c7b156393c004c5ebb67103dd15628eafe";
const DICT_FILE: &str = "data/hl7v2/definitions/hl7-dictionary-1.0.1.tgz";
const DICT_SHA256: &str = "a23751c26d83a897fe5734ca198555c13c0d306d78b5578b103f0d63198182ef";
const TERM_FILE: &str = "data/fhir/packages/hl7.terminology.r4-7.0.1.tgz";
const TERM_SHA256: &str = "170c546f761fb51b3355788ca500206f6b772b21c57348c29205de85a6612baa";
const ERRATA_FILE: &str = "xtask/hl7v2-errata.toml";

/// (version, hl7apy module, hl7-dictionary directory for lengths and names).
const VERSIONS: [(&str, &str, Option<&str>); 12] = [
    ("2.1", "v2_1", Some("2.1")),
    ("2.2", "v2_2", Some("2.2")),
    ("2.3", "v2_3", Some("2.3")),
    ("2.3.1", "v2_3_1", Some("2.3.1")),
    ("2.4", "v2_4", Some("2.4")),
    ("2.5", "v2_5", Some("2.5")),
    ("2.5.1", "v2_5_1", Some("2.5.1")),
    ("2.6", "v2_6", Some("2.6")),
    ("2.7", "v2_7", Some("2.7.1")),
    ("2.8", "v2_8", None),
    ("2.8.1", "v2_8_1", None),
    ("2.8.2", "v2_8_2", None),
];
/// Versions compared in `disagreements.tsv` (both sources have the same version).
const COMPARED: [&str; 8] = ["2.1", "2.2", "2.3", "2.3.1", "2.4", "2.5", "2.5.1", "2.6"];
/// Rules implemented in code that the errata file must document.
const RULES: [&str; 5] = [
    "field-by-child-name",
    "withdrawn-gaps",
    "drop-empty-groups",
    "null-type",
    "nbsp-codes",
];

/// Entry point: `check` = compare with the committed files instead of writing them.
pub fn run(check: bool) -> Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let shared = root.join("../shared");
    let apy = read_tar(&shared.join(HL7APY_FILE), HL7APY_SHA256, |p| {
        p.contains("/hl7apy/v2_") && p.ends_with(".py")
    })?;
    let dict = read_tar(&shared.join(DICT_FILE), DICT_SHA256, |p| {
        p.starts_with("package/lib/") && p.ends_with(".js")
    })?;
    let term = read_tar(&shared.join(TERM_FILE), TERM_SHA256, |p| {
        p.starts_with("package/CodeSystem-v2-") && p.ends_with(".json")
    })?;
    let errata_text = std::fs::read_to_string(root.join(ERRATA_FILE))?;
    let errata: toml::Table = toml::from_str(&errata_text).context("parsing the errata file")?;
    let files = generate(&apy, &dict, &term, &errata)?;

    let out = root.join("crates/hl7v2/src/generated");
    crate::generated::write_or_check(&out, &files, check, "hl7v2")
}

/// Text files of a tarball whose path passes `keep`, keyed by path.
fn read_tar(
    path: &Path,
    sha: &str,
    keep: impl Fn(&str) -> bool,
) -> Result<HashMap<String, String>> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let got = sha256_hex(&bytes);
    ensure!(
        got == sha,
        "{} has sha256 {got}, expected {sha}",
        path.display()
    );
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(&bytes[..]));
    let mut files = HashMap::new();
    for entry in archive.entries()? {
        let mut entry = entry?;
        let name = entry.path()?.to_string_lossy().into_owned();
        if keep(&name) {
            let mut text = String::new();
            entry.read_to_string(&mut text)?;
            files.insert(name, text);
        }
    }
    Ok(files)
}

// ---------------------------------------------------------------------------------------------------------------
// Python literal subset: strings, ints, None, tuples, lists, dicts, and `NAME['key']` references (kept as names).

#[derive(Clone, Debug, PartialEq)]
enum Py {
    Str(String),
    Int(i64),
    None,
    Ref(String, String),
    Seq(Vec<Py>),
    Dict(Vec<(Py, Py)>),
}

impl Py {
    fn str(&self) -> Option<&str> {
        match self {
            Py::Str(s) => Some(s),
            _ => None,
        }
    }
    fn seq(&self) -> Option<&[Py]> {
        match self {
            Py::Seq(v) => Some(v),
            _ => None,
        }
    }
    fn int(&self) -> Option<i64> {
        match self {
            Py::Int(i) => Some(*i),
            _ => None,
        }
    }
}

struct PyParser<'a> {
    b: &'a [u8],
    i: usize,
}

/// The top-level `NAME = <literal>` assignments of a module; everything else (imports, `for` loops) is skipped.
fn parse_module(src: &str) -> Result<HashMap<String, Py>> {
    let mut p = PyParser {
        b: src.as_bytes(),
        i: 0,
    };
    let mut out = HashMap::new();
    while p.i < p.b.len() {
        // At the start of a line.
        let line_end = p.b[p.i..]
            .iter()
            .position(|&c| c == b'\n')
            .map_or(p.b.len(), |n| p.i + n);
        let line = &src[p.i..line_end];
        let name_len = line
            .bytes()
            .take_while(|c| c.is_ascii_uppercase() || *c == b'_')
            .count();
        if name_len > 0 && line[name_len..].starts_with(" = ") {
            let name = line[..name_len].to_string();
            p.i += name_len + 3;
            let value = p.value().with_context(|| format!("parsing {name}"))?;
            out.insert(name, value);
            // Continue at the next line.
            while p.i < p.b.len() && p.b[p.i] != b'\n' {
                p.i += 1;
            }
        } else {
            p.i = line_end;
        }
        p.i += 1;
    }
    Ok(out)
}

impl PyParser<'_> {
    fn skip_ws(&mut self) {
        while self.i < self.b.len() {
            match self.b[self.i] {
                b' ' | b'\t' | b'\r' | b'\n' => self.i += 1,
                b'#' => {
                    while self.i < self.b.len() && self.b[self.i] != b'\n' {
                        self.i += 1;
                    }
                }
                _ => break,
            }
        }
    }
    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.b.get(self.i).copied()
    }
    fn expect(&mut self, c: u8) -> Result<()> {
        ensure!(
            self.peek() == Some(c),
            "expected {:?} at byte {}",
            c as char,
            self.i
        );
        self.i += 1;
        Ok(())
    }
    /// A plain (non-prefixed, single-line) Python string literal, escapes decoded as Python 3 decodes them in a
    /// `str` literal: `\\ \' \" \a \b \f \n \r \t \v`, octal `\ooo`, `\xhh`, `\uXXXX`, `\UXXXXXXXX` (code
    /// points, not bytes), backslash-newline (nothing); an unknown escape keeps its backslash, as in Python.
    /// `\N{name}` is not supported (an error, so it cannot slip through undecoded).
    fn string(&mut self) -> Result<String> {
        let quote = self.b[self.i];
        self.i += 1;
        let start = self.i;
        let mut s = String::new();
        loop {
            // Copy the run of ordinary bytes up to the next backslash or quote (UTF-8 passes through whole).
            let run = self.b[self.i..]
                .iter()
                .position(|&c| c == b'\\' || c == quote)
                .with_context(|| format!("unterminated string at byte {start}"))?;
            s.push_str(std::str::from_utf8(&self.b[self.i..self.i + run])?);
            self.i += run;
            let c = self.b[self.i];
            self.i += 1;
            if c == quote {
                return Ok(s);
            }
            let e = *self.b.get(self.i).context("unterminated escape")?;
            self.i += 1;
            let hex = |p: &mut Self, n: usize| -> Result<char> {
                let digits =
                    p.b.get(p.i..p.i + n)
                        .and_then(|d| std::str::from_utf8(d).ok())
                        .filter(|d| d.bytes().all(|b| b.is_ascii_hexdigit()))
                        .with_context(|| format!("bad \\{} escape at byte {}", e as char, p.i))?;
                p.i += n;
                let cp = u32::from_str_radix(digits, 16)?;
                char::from_u32(cp).with_context(|| format!("escape of U+{cp:X} is not a character"))
            };
            match e {
                b'\\' | b'\'' | b'"' => s.push(e as char),
                b'\n' => {}
                b'\r' if self.b.get(self.i) == Some(&b'\n') => self.i += 1,
                b'a' => s.push('\u{7}'),
                b'b' => s.push('\u{8}'),
                b'f' => s.push('\u{c}'),
                b'n' => s.push('\n'),
                b'r' => s.push('\r'),
                b't' => s.push('\t'),
                b'v' => s.push('\u{b}'),
                b'x' => s.push(hex(self, 2)?),
                b'u' => s.push(hex(self, 4)?),
                b'U' => s.push(hex(self, 8)?),
                b'0'..=b'7' => {
                    let mut cp = u32::from(e - b'0');
                    for _ in 0..2 {
                        match self.b.get(self.i) {
                            Some(&d @ b'0'..=b'7') => {
                                cp = cp * 8 + u32::from(d - b'0');
                                self.i += 1;
                            }
                            _ => break,
                        }
                    }
                    s.push(char::from_u32(cp).context("octal escape")?);
                }
                b'N' => bail!("\\N{{...}} escape at byte {} is not supported", self.i),
                _ => {
                    s.push('\\');
                    self.i -= 1;
                }
            }
        }
    }
    /// Items up to `close`; returns them and whether a trailing comma was seen.
    fn items(&mut self, close: u8) -> Result<(Vec<Py>, bool)> {
        let mut items = Vec::new();
        let mut trailing = false;
        loop {
            if self.peek() == Some(close) {
                self.i += 1;
                return Ok((items, trailing));
            }
            items.push(self.value()?);
            trailing = false;
            match self.peek() {
                Some(b',') => {
                    self.i += 1;
                    trailing = true;
                }
                Some(c) if c == close => {}
                other => bail!(
                    "expected ',' or {:?} at byte {}, got {other:?}",
                    close as char,
                    self.i
                ),
            }
        }
    }
    fn value(&mut self) -> Result<Py> {
        let c = self.peek().context("unexpected end of input")?;
        Ok(match c {
            b'\'' | b'"' => {
                let mut s = self.string()?;
                // Implicit concatenation of adjacent literals.
                while matches!(self.peek(), Some(b'\'' | b'"')) {
                    s.push_str(&self.string()?);
                }
                Py::Str(s)
            }
            b'(' => {
                self.i += 1;
                let (mut items, trailing) = self.items(b')')?;
                // `(x)` is x itself; `(x,)` is a tuple.
                if items.len() == 1 && !trailing {
                    items.pop().unwrap()
                } else {
                    Py::Seq(items)
                }
            }
            b'[' => {
                self.i += 1;
                Py::Seq(self.items(b']')?.0)
            }
            b'{' => {
                self.i += 1;
                let mut entries = Vec::new();
                loop {
                    if self.peek() == Some(b'}') {
                        self.i += 1;
                        break;
                    }
                    let k = self.value()?;
                    self.expect(b':')?;
                    let v = self.value()?;
                    entries.push((k, v));
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {}
                        other => bail!("expected ',' or '}}' at byte {}, got {other:?}", self.i),
                    }
                }
                Py::Dict(entries)
            }
            b'-' | b'0'..=b'9' => {
                let start = self.i;
                self.i += 1;
                while self.b.get(self.i).is_some_and(u8::is_ascii_digit) {
                    self.i += 1;
                }
                Py::Int(std::str::from_utf8(&self.b[start..self.i])?.parse()?)
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let start = self.i;
                while self
                    .b
                    .get(self.i)
                    .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
                {
                    self.i += 1;
                }
                let ident = std::str::from_utf8(&self.b[start..self.i])?.to_string();
                if ident == "None" {
                    Py::None
                } else {
                    self.expect(b'[')?;
                    let key = self.value()?;
                    self.expect(b']')?;
                    Py::Ref(
                        ident,
                        key.str()
                            .context("reference key is not a string")?
                            .to_string(),
                    )
                }
            }
            other => bail!("unexpected {:?} at byte {}", other as char, self.i),
        })
    }
}

fn dict_of(module: &HashMap<String, Py>, name: &str) -> Result<BTreeMap<String, Py>> {
    match module.get(name) {
        Some(Py::Dict(entries)) => entries
            .iter()
            .map(|(k, v)| Ok((k.str().context("non-string key")?.to_string(), v.clone())))
            .collect(),
        _ => bail!("no dict {name}"),
    }
}

// ---------------------------------------------------------------------------------------------------------------
// The model written out.

#[derive(Clone, Debug, PartialEq)]
struct Field {
    name: String,
    dt: String,
    min: u32,
    max: Option<u32>,
    len: Option<u32>,
    table: Option<u16>,
}

#[derive(Clone, Debug, PartialEq)]
struct Comp {
    name: String,
    dt: String,
    len: Option<u32>,
    table: Option<u16>,
}

#[derive(Clone, Debug)]
enum Node {
    Seg {
        id: String,
        min: u32,
        max: Option<u32>,
    },
    Group {
        name: String,
        choice: bool,
        min: u32,
        max: Option<u32>,
        children: Vec<Node>,
    },
}

#[derive(Default)]
struct Version {
    structures: BTreeMap<String, Vec<Node>>,
    segments: BTreeMap<String, (String, Vec<Field>)>,
    datatypes: BTreeMap<String, Vec<Comp>>,
    tables: BTreeMap<u16, TableDef>,
}

/// A table's name and its (code, display) pairs, sorted by code.
type TableDef = (String, Vec<(String, Option<String>)>);

fn title(long: &str) -> String {
    long.split('_')
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut c = w.chars();
            let first = c.next().unwrap().to_ascii_uppercase();
            std::iter::once(first)
                .chain(c.flat_map(char::to_lowercase))
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn table_id(v: &Py) -> Option<u16> {
    v.str()?
        .strip_prefix("HL7")
        .filter(|d| d.len() == 4)?
        .parse()
        .ok()
}

fn card(v: &Py) -> Result<(u32, Option<u32>)> {
    let s = v.seq().context("cardinality is not a tuple")?;
    ensure!(s.len() == 2, "cardinality {v:?}");
    let min = u32::try_from(s[0].int().context("min")?)?;
    let max = s[1].int().context("max")?;
    Ok((
        min,
        if max < 0 {
            None
        } else {
            Some(u32::try_from(max)?)
        },
    ))
}

fn clean(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn js_json(text: &str) -> Result<Value> {
    let start = text.find('=').context("no `var x =`")? + 1;
    let end = text.rfind("module.exports").unwrap_or(text.len());
    let body = text[start..end].trim().trim_end_matches(';');
    Ok(serde_json::from_str(body)?)
}

struct Errata {
    table: toml::Table,
    used: std::cell::RefCell<BTreeSet<String>>,
}

impl Errata {
    fn entries(&self, kind: &str) -> Vec<(usize, &toml::Table)> {
        self.table
            .get(kind)
            .and_then(|v| v.as_array())
            .map(|a| {
                a.iter()
                    .enumerate()
                    .filter_map(|(i, e)| e.as_table().map(|t| (i, t)))
                    .collect()
            })
            .unwrap_or_default()
    }
    fn mark(&self, kind: &str, i: usize) {
        self.used.borrow_mut().insert(format!("{kind}#{i}"));
    }
}

fn s<'a>(t: &'a toml::Table, key: &str) -> Result<&'a str> {
    t.get(key)
        .and_then(|v| v.as_str())
        .with_context(|| format!("errata entry lacks {key}"))
}
fn list(t: &toml::Table, key: &str) -> Result<Vec<String>> {
    t.get(key)
        .and_then(|v| v.as_array())
        .with_context(|| format!("errata entry lacks {key}"))?
        .iter()
        .map(|v| v.as_str().map(str::to_string).context("not a string"))
        .collect()
}

fn generate(
    apy: &HashMap<String, String>,
    dict: &HashMap<String, String>,
    term: &HashMap<String, String>,
    errata_table: &toml::Table,
) -> Result<Vec<(String, String)>> {
    let errata = Errata {
        table: errata_table.clone(),
        used: Default::default(),
    };
    for kind in [
        "segment_kind",
        "segment_copy",
        "drop_segment",
        "table_rename",
        "table_code_split",
        "group_rename",
        "events_0354",
        "rule",
    ] {
        for (_, e) in errata.entries(kind) {
            ensure!(
                !s(e, "reason")?.trim().is_empty(),
                "errata {kind} entry without a reason"
            );
        }
    }
    let documented: BTreeSet<String> = errata
        .entries("rule")
        .iter()
        .filter_map(|(_, e)| s(e, "id").ok().map(str::to_string))
        .collect();
    for rule in RULES {
        ensure!(
            documented.contains(rule),
            "errata file does not document rule {rule:?}"
        );
    }
    for (_, e) in errata.entries("group_rename") {
        let (from, to) = (s(e, "from")?, s(e, "to")?);
        ensure!(
            from != to
                && [from, to].iter().all(|n| !n.is_empty()
                    && n.bytes()
                        .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')),
            "errata group_rename {from} -> {to}: not two different group names"
        );
        ensure!(
            !list(e, "versions")?.is_empty() && !s(e, "structure")?.is_empty(),
            "errata group_rename {from}: empty versions or structure"
        );
    }
    let dropped: BTreeSet<String> = errata
        .entries("drop_segment")
        .iter()
        .filter_map(|(_, e)| s(e, "segment").ok().map(str::to_string))
        .collect();
    for (i, _) in errata.entries("drop_segment") {
        errata.mark("drop_segment", i);
    }

    let module = |ver: &str, name: &str| -> Result<HashMap<String, Py>> {
        let text = apy
            .iter()
            .find(|(p, _)| p.ends_with(&format!("/hl7apy/{ver}/{name}.py")))
            .with_context(|| format!("hl7apy has no {ver}/{name}.py"))?
            .1;
        parse_module(text).with_context(|| format!("parsing hl7apy {ver}/{name}.py"))
    };
    let dict_js = |path: &str| -> Result<Value> {
        js_json(
            dict.get(&format!("package/lib/{path}"))
                .with_context(|| format!("hl7-dictionary lacks {path}"))?,
        )
        .with_context(|| format!("parsing hl7-dictionary {path}"))
    };
    let dict_tables = dict_js("tables.js")?;

    // HL7 Terminology: table displays.
    let mut displays: HashMap<u16, HashMap<String, String>> = HashMap::new();
    let mut events_0354: Option<Value> = None;
    for (path, text) in term {
        let Some(num) = path
            .strip_prefix("package/CodeSystem-v2-")
            .and_then(|r| r.strip_suffix(".json"))
        else {
            continue;
        };
        let Ok(id) = num.parse::<u16>() else { continue };
        if num.len() != 4 {
            continue;
        }
        let cs: Value = serde_json::from_str(text)?;
        fn walk(concepts: &Value, out: &mut HashMap<String, String>) {
            for c in concepts.as_array().into_iter().flatten() {
                if let (Some(code), Some(d)) = (c["code"].as_str(), c["display"].as_str()) {
                    out.insert(code.to_string(), clean(d));
                }
                walk(&c["concept"], out);
            }
        }
        let mut map = HashMap::new();
        walk(&cs["concept"], &mut map);
        if id == 354 {
            events_0354 = Some(cs["concept"].clone());
        }
        displays.insert(id, map);
    }

    // Table 0354: structure -> events.
    let mut events: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let overrides: Vec<(usize, String, Vec<String>)> = errata
        .entries("events_0354")
        .iter()
        .map(|(i, e)| Ok((*i, s(e, "structure")?.to_string(), list(e, "events")?)))
        .collect::<Result<_>>()?;
    for c in events_0354
        .context("no CodeSystem-v2-0354.json")?
        .as_array()
        .into_iter()
        .flatten()
    {
        let code = c["code"]
            .as_str()
            .context("0354 concept without code")?
            .to_string();
        if let Some((i, _, evs)) = overrides.iter().find(|(_, st, _)| *st == code) {
            errata.mark("events_0354", *i);
            events.insert(code, evs.clone());
            continue;
        }
        let Some(display) = c["display"].as_str() else {
            continue;
        };
        if let Some(evs) = parse_event_list(display) {
            events.insert(code, evs);
        }
    }

    let mut versions: Vec<(&str, Version)> = Vec::new();
    let mut apy_82: Option<(BTreeMap<String, Py>, BTreeMap<String, Py>)> = None;
    let mut apy_26: Option<(BTreeMap<String, Py>, BTreeMap<String, Py>)> = None;
    // 2.8.2 is read first: it fills the withdrawn-field gaps of 2.8 and 2.8.1.
    for &(ver, module_name, _) in VERSIONS
        .iter()
        .rev()
        .take(1)
        .chain(VERSIONS.iter().filter(|v| v.0 == "2.6"))
    {
        let segs = dict_of(&module(module_name, "segments")?, "SEGMENTS")?;
        let fields = dict_of(&module(module_name, "fields")?, "FIELDS")?;
        if ver == "2.8.2" {
            apy_82 = Some((segs, fields));
        } else {
            apy_26 = Some((segs, fields));
        }
    }
    let (segs_82, fields_82) = apy_82.unwrap();
    let (segs_26, fields_26) = apy_26.unwrap();

    for &(ver, module_name, dict_ver) in &VERSIONS {
        let mut out = Version::default();
        let mut segs = dict_of(&module(module_name, "segments")?, "SEGMENTS")?;
        let mut fields = dict_of(&module(module_name, "fields")?, "FIELDS")?;
        let dt_module = module(module_name, "datatypes")?;
        let dts = dict_of(&dt_module, "DATATYPES")?;
        let structs = dict_of(&dt_module, "DATATYPES_STRUCTS")?;
        let messages = dict_of(&module(module_name, "messages")?, "MESSAGES")?;
        let groups = dict_of(&module(module_name, "groups")?, "GROUPS")?;
        let apy_tables = if module_name >= "v2_3_1" {
            Some(dict_of(&module(module_name, "tables")?, "TABLES")?)
        } else {
            None
        };
        let d_segs = dict_ver
            .map(|d| dict_js(&format!("{d}/segments.js")))
            .transpose()?;
        let d_types = dict_ver
            .map(|d| dict_js(&format!("{d}/fields.js")))
            .transpose()?;
        // Segment names for 2.8.x: the nearest hl7-dictionary version (2.7.1).
        let d_names = match &d_segs {
            Some(d) => d.clone(),
            None => dict_js("2.7.1/segments.js")?,
        };

        // Errata: malformed segments.
        for (i, e) in errata.entries("segment_kind") {
            if s(e, "version")? != ver {
                continue;
            }
            let id = s(e, "segment")?;
            let v = segs
                .get_mut(id)
                .with_context(|| format!("errata: {ver} has no segment {id}"))?;
            let is_bare = v
                .seq()
                .is_some_and(|items| items.first().is_some_and(|x| x.seq().is_some()));
            ensure!(
                is_bare,
                "errata segment_kind {ver} {id}: the source is no longer malformed"
            );
            *v = Py::Seq(vec![Py::Str(s(e, "kind")?.to_string()), v.clone()]);
            errata.mark("segment_kind", i);
        }
        for (i, e) in errata.entries("segment_copy") {
            if !list(e, "versions")?.iter().any(|v| v == ver) {
                continue;
            }
            ensure!(
                s(e, "from")? == "2.6",
                "segment_copy supports from = \"2.6\" only"
            );
            for id in list(e, "segments")? {
                let current = segs
                    .get(&id)
                    .with_context(|| format!("errata: {ver} has no segment {id}"))?;
                let empty = current
                    .seq()
                    .is_some_and(|x| x.len() < 2 || x[1].seq().is_some_and(<[Py]>::is_empty));
                ensure!(
                    empty,
                    "errata segment_copy {ver} {id}: the source now defines fields"
                );
                let def = segs_26
                    .get(&id)
                    .context("2.6 lacks the copied segment")?
                    .clone();
                for child in def.seq().unwrap()[1].seq().unwrap() {
                    let name = child.seq().unwrap()[0].str().unwrap().to_string();
                    fields.insert(name.clone(), fields_26[&name].clone());
                }
                segs.insert(id, def);
            }
            errata.mark("segment_copy", i);
        }

        // Data types: composites from DATATYPES_STRUCTS, primitives from every type name used.
        let mut used_types = BTreeSet::new();
        for (id, children) in &structs {
            let mut comps = Vec::new();
            let d_type = d_types.as_ref().and_then(|d| d.get(id));
            for (i, child) in children
                .seq()
                .context("struct is not a tuple")?
                .iter()
                .enumerate()
            {
                let child = child.seq().context("component is not a tuple")?;
                let name = child[0].str().context("component name")?;
                ensure!(
                    name == format!("{id}_{}", i + 1),
                    "{ver} {id}: component {name} out of place"
                );
                let def = dts
                    .get(name)
                    .with_context(|| format!("{ver}: no DATATYPES[{name}]"))?;
                let def = def.seq().context("datatype entry")?;
                let dt = def[2].str().context("component type")?.to_string();
                let d_sub = d_type.and_then(|t| t["subfields"].get(i));
                comps.push(Comp {
                    name: d_sub
                        .and_then(|s| s["desc"].as_str())
                        .map(clean)
                        .filter(|n| !n.is_empty())
                        .unwrap_or_else(|| {
                            title(def[3].str().filter(|s| !s.is_empty()).unwrap_or(name))
                        }),
                    dt: dt.clone(),
                    len: d_sub.and_then(|s| s["len"].as_u64()).map(|n| n as u32),
                    table: table_id(&def[4]),
                });
                used_types.insert(dt);
            }
            out.datatypes.insert(id.clone(), comps);
        }

        // Segments.
        let mut renamed_gaps = 0;
        for (id, def) in &segs {
            if dropped.contains(id) {
                continue;
            }
            let def = def
                .seq()
                .with_context(|| format!("{ver} {id}: not a tuple"))?;
            ensure!(
                def.len() == 2 && def[0].str() == Some("sequence"),
                "{ver} segment {id} malformed: {def:?}"
            );
            let children = def[1].seq().context("segment children")?;
            let d_seg = d_segs.as_ref().and_then(|d| d.get(id));
            let mut by_number: BTreeMap<u32, Field> = BTreeMap::new();
            for child in children {
                let child = child.seq().context("field child")?;
                let name = child[0].str().context("field name")?;
                let n: u32 = name
                    .strip_prefix(id.as_str())
                    .and_then(|r| r.strip_prefix('_'))
                    .and_then(|r| r.parse().ok())
                    .with_context(|| format!("{ver} {id}: field child {name}"))?;
                let (min, max) = card(&child[2])?;
                let f = fields
                    .get(name)
                    .with_context(|| format!("{ver}: no FIELDS[{name}]"))?;
                let f = f.seq().context("field entry")?;
                let d_field = d_seg.and_then(|s| s["fields"].get(n as usize - 1));
                // Rule null-type: hl7apy 2.5.1 has no type for MSA-5 and OBX-20..22.
                let dt = match &f[2] {
                    Py::Str(t) => t.clone(),
                    Py::None => d_field
                        .and_then(|d| d["datatype"].as_str())
                        .with_context(|| format!("{ver} {name}: no type in either source"))?
                        .to_string(),
                    other => bail!("{ver} {name}: field type {other:?}"),
                };
                let field = Field {
                    name: d_field
                        .and_then(|f| f["desc"].as_str())
                        .map(clean)
                        .filter(|n| !n.is_empty())
                        .unwrap_or_else(|| {
                            title(f[3].str().filter(|s| !s.is_empty()).unwrap_or(name))
                        }),
                    dt,
                    min,
                    max,
                    len: d_field.and_then(|f| f["len"].as_u64()).map(|n| n as u32),
                    table: table_id(&f[4]),
                };
                ensure!(
                    by_number.insert(n, field).is_none(),
                    "{ver} {id}: field {n} twice"
                );
            }
            // Rule withdrawn-gaps.
            let last = by_number.keys().next_back().copied().unwrap_or(0);
            for n in 1..last {
                if by_number.contains_key(&n) {
                    continue;
                }
                renamed_gaps += 1;
                let key = format!("{id}_{n}");
                let field = if ver.starts_with("2.8") {
                    let child = segs_82[id].seq().unwrap()[1]
                        .seq()
                        .unwrap()
                        .iter()
                        .find(|c| c.seq().unwrap()[0].str() == Some(&key))
                        .with_context(|| format!("{ver} gap {key} not in 2.8.2"))?;
                    let f = fields_82[&key].seq().unwrap();
                    let (min, max) = card(&child.seq().unwrap()[2])?;
                    ensure!((min, max) == (0, Some(0)), "2.8.2 {key} is not withdrawn");
                    Field {
                        name: title(f[3].str().unwrap()),
                        dt: f[2].str().unwrap().to_string(),
                        min,
                        max,
                        len: None,
                        table: table_id(&f[4]),
                    }
                } else {
                    let d = d_seg
                        .and_then(|s| s["fields"].get(n as usize - 1))
                        .with_context(|| format!("{ver} gap {key} not in hl7-dictionary"))?;
                    Field {
                        min: 0,
                        max: Some(0),
                        ..dict_field(d, 0)?
                    }
                };
                by_number.insert(n, field);
            }
            let name = d_names
                .get(id)
                .and_then(|s| s["desc"].as_str())
                .map(clean)
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| id.clone());
            let fields: Vec<Field> = by_number.into_values().collect();
            used_types.extend(fields.iter().map(|f| f.dt.clone()));
            out.segments.insert(id.clone(), (name, fields));
        }
        ensure!(
            renamed_gaps == 0 || ["2.6", "2.8", "2.8.1"].contains(&ver),
            "{ver}: unexpected withdrawn-field gaps; review rule withdrawn-gaps"
        );
        for dt in used_types {
            out.datatypes.entry(dt).or_default();
        }

        // Structures.
        let mut rename_entries = Vec::new();
        for (i, e) in errata.entries("group_rename") {
            if list(e, "versions")?.iter().any(|v| v == ver) {
                rename_entries.push((
                    i,
                    s(e, "structure")?.to_string(),
                    s(e, "from")?.to_string(),
                    s(e, "to")?.to_string(),
                ));
            }
        }
        let renames = GroupRenames {
            ver,
            errata: &errata,
            entries: rename_entries,
        };
        let ctx = StructureCtx {
            ver,
            groups: &groups,
            dropped: &dropped,
            segments: &out.segments,
            renames: &renames,
        };
        for (id, def) in &messages {
            let children = build_children(&ctx, id, id, def)?;
            out.structures.insert(id.clone(), children);
        }

        // Tables.
        let mut referenced: BTreeSet<u16> = BTreeSet::new();
        for (_, fs) in out.segments.values() {
            referenced.extend(fs.iter().filter_map(|f| f.table));
        }
        for cs in out.datatypes.values() {
            referenced.extend(cs.iter().filter_map(|c| c.table));
        }
        let mut raw: BTreeMap<u16, (String, Vec<String>)> = BTreeMap::new();
        if let Some(tables) = &apy_tables {
            for (key, def) in tables {
                let mut key = key.clone();
                for (i, e) in errata.entries("table_rename") {
                    if s(e, "version")? == ver && s(e, "from")? == key {
                        key = s(e, "to")?.to_string();
                        errata.mark("table_rename", i);
                    }
                }
                let Some(id) = table_id(&Py::Str(key.clone())) else {
                    bail!("{ver}: table key {key} is not HL7nnnn; add an errata entry");
                };
                let def = def.seq().context("table entry")?;
                let name = clean(def[0].str().context("table name")?);
                let mut codes: Vec<String> = match &def[1] {
                    Py::Seq(v) => v
                        .iter()
                        .map(|c| c.str().map(str::to_string).context("code"))
                        .collect::<Result<_>>()?,
                    Py::Str(s) => vec![s.clone()],
                    other => bail!("{ver} {key}: codes {other:?}"),
                };
                for (i, e) in errata.entries("table_code_split") {
                    if list(e, "versions")?.iter().any(|v| v == ver) && s(e, "table")? == key {
                        let code = s(e, "code")?;
                        let pos = codes
                            .iter()
                            .position(|c| c == code)
                            .context("table_code_split: code gone")?;
                        codes.splice(pos..=pos, list(e, "into")?);
                        errata.mark("table_code_split", i);
                    }
                }
                ensure!(
                    raw.insert(id, (name, codes)).is_none(),
                    "{ver}: table {id} twice"
                );
            }
        }
        for id in referenced {
            if raw.contains_key(&id) {
                continue;
            }
            let Some(t) = dict_tables.get(id.to_string()) else {
                continue;
            };
            let codes = t["values"]
                .as_object()
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default();
            raw.insert(id, (clean(t["desc"].as_str().unwrap_or("")), codes));
        }
        for (id, (name, codes)) in raw {
            let d_values = dict_tables.get(id.to_string()).map(|t| &t["values"]);
            let term = displays.get(&id);
            let mut coded: Vec<(String, Option<String>)> = codes
                .into_iter()
                // Rule nbsp-codes: trim Unicode whitespace (no-break space included), after undoing the
                // mojibake 'Â' + no-break space (its UTF-8 bytes C2 A0 read as Latin-1).
                .map(|c| c.replace("\u{c2}\u{a0}", "\u{a0}").trim().to_string())
                .filter(|c| !c.is_empty())
                .map(|c| {
                    let display = term.and_then(|m| m.get(&c).cloned()).or_else(|| {
                        d_values
                            .and_then(|v| v[&c].as_str())
                            .map(clean)
                            .filter(|d| !d.is_empty())
                    });
                    (c, display)
                })
                .collect();
            coded.sort();
            coded.dedup_by(|a, b| a.0 == b.0);
            if !coded.is_empty() {
                out.tables.insert(id, (name, coded));
            }
        }
        versions.push((ver, out));
    }

    // Every errata entry must have applied somewhere; a group rename in each of its versions.
    for (i, e) in errata.entries("group_rename") {
        for ver in list(e, "versions")? {
            ensure!(
                errata
                    .used
                    .borrow()
                    .contains(&format!("group_rename@{ver}#{i}")),
                "errata group_rename entry #{i} ({}) no longer applies in {ver}",
                s(e, "from")?
            );
        }
    }
    for kind in [
        "segment_kind",
        "segment_copy",
        "table_rename",
        "table_code_split",
        "events_0354",
    ] {
        for (i, _) in errata.entries(kind) {
            ensure!(
                errata.used.borrow().contains(&format!("{kind}#{i}")),
                "errata {kind} entry #{i} no longer applies"
            );
        }
    }

    let header = |what: &str| {
        format!(
            "# @generated by `cargo xtask codegen` (xtask/src/codegen_hl7v2.rs); do not edit. {what}\n\
             # Sources: hl7apy-0297526c.tar.gz (sha256 {HL7APY_SHA256}),\n\
             #   hl7-dictionary-1.0.1.tgz (sha256 {DICT_SHA256}),\n\
             #   hl7.terminology.r4-7.0.1.tgz (sha256 {TERM_SHA256}); corrections: xtask/hl7v2-errata.toml.\n\
             # Format: see crates/hl7v2/src/definitions.rs. Attribution: NOTICE in this directory.\n"
        )
    };
    let mut files = Vec::new();
    for (ver, v) in &versions {
        files.push((
            format!("v{}.tsv", ver.replace('.', "_")),
            write_version(&header(&format!("HL7 v{ver}.")), v)?,
        ));
    }
    files.push((
        "tables.tsv".to_string(),
        write_tables(&header("Code tables."), &versions)?,
    ));
    let mut ev = header("Table 0354: message structure -> trigger events (HL7 Terminology).");
    for (st, evs) in &events {
        writeln!(ev, "{st}\t{}", evs.join(" "))?;
    }
    files.push(("events.tsv".to_string(), ev));
    files.push((
        "disagreements.tsv".to_string(),
        write_disagreements(&header(DISAGREE_DOC), &versions, &dict_js)?,
    ));
    files.push(("NOTICE".to_string(), NOTICE.to_string()));
    for (name, text) in &files {
        ensure!(!text.contains('\r'), "{name}: carriage return in output");
    }
    Ok(files)
}

const DISAGREE_DOC: &str = "hl7apy (after errata) vs hl7-dictionary, same version, on field data type and \
repetition.\n# Columns: version, field, what (type | max | count = number of fields), hl7apy (what the definitions \
say), hl7-dictionary.";

/// Parses a table 0354 display such as "A01, A04, A08, A13" or "Events U14"; None for free text.
fn parse_event_list(display: &str) -> Option<Vec<String>> {
    let text = display
        .trim()
        .strip_prefix("Events ")
        .unwrap_or(display.trim())
        .trim_end_matches(',');
    let evs: Vec<String> = text
        .split([',', '.'])
        .map(|e| e.trim().to_string())
        .collect();
    let ok = evs.iter().all(|e| {
        e.len() == 3
            && e.as_bytes()[0].is_ascii_uppercase()
            && e.bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
    }) && evs.iter().any(|e| e.bytes().any(|b| b.is_ascii_digit()));
    ok.then_some(evs)
}

/// What [`build_children`] needs besides the node it builds.
struct StructureCtx<'a> {
    ver: &'a str,
    groups: &'a BTreeMap<String, Py>,
    dropped: &'a BTreeSet<String>,
    segments: &'a BTreeMap<String, (String, Vec<Field>)>,
    renames: &'a GroupRenames<'a>,
}

/// The `[[group_rename]]` errata of one version: (entry index, structure or "*", from, to).
struct GroupRenames<'a> {
    ver: &'a str,
    errata: &'a Errata,
    entries: Vec<(usize, String, String, String)>,
}

impl GroupRenames<'_> {
    /// The name to write for group `name` (without its structure prefix) in top-level structure `root`.
    fn apply(&self, root: &str, name: &str) -> String {
        for (i, structure, from, to) in &self.entries {
            if from == name && (structure == "*" || structure == root) {
                self.errata.mark(&format!("group_rename@{}", self.ver), *i);
                return to.clone();
            }
        }
        name.to_string()
    }
}

fn build_children(ctx: &StructureCtx, root: &str, structure: &str, def: &Py) -> Result<Vec<Node>> {
    let StructureCtx {
        ver,
        groups,
        dropped,
        segments,
        renames,
    } = *ctx;
    let def = def
        .seq()
        .with_context(|| format!("{ver} {structure}: not a tuple"))?;
    ensure!(def.len() == 2, "{ver} {structure}: malformed {def:?}");
    let mut out = Vec::new();
    for child in def[1].seq().context("children")? {
        let c = child.seq().context("child")?;
        let name = c[0].str().context("child name")?;
        let (min, max) = card(&c[2])?;
        match c[3].str() {
            Some("SEG") => {
                if dropped.contains(name) {
                    continue;
                }
                ensure!(
                    segments.contains_key(name),
                    "{ver} {structure}: unknown segment {name}"
                );
                out.push(Node::Seg {
                    id: name.to_string(),
                    min,
                    max,
                });
            }
            Some("GRP") => {
                let g = groups
                    .get(name)
                    .with_context(|| format!("{ver}: no group {name}"))?;
                let kind = g.seq().and_then(|x| x.first()).and_then(Py::str);
                let choice = match kind {
                    Some("sequence") => false,
                    Some("choice") => true,
                    _ => bail!("{ver} group {name}: kind {kind:?}"),
                };
                let children = build_children(ctx, root, name, g)?;
                // Rule drop-empty-groups.
                if children.is_empty() {
                    continue;
                }
                let parts: Vec<&str> = name.splitn(3, '_').collect();
                ensure!(parts.len() == 3, "{ver} group {name}: no structure prefix");
                let group_name = renames.apply(root, parts[2]);
                ensure!(
                    !out.iter()
                        .any(|n| matches!(n, Node::Group { name, .. } if *name == group_name)),
                    "{ver} {structure}: two groups named {group_name}"
                );
                out.push(Node::Group {
                    name: group_name,
                    choice,
                    min,
                    max,
                    children,
                });
            }
            other => bail!("{ver} {structure}: child kind {other:?}"),
        }
    }
    Ok(out)
}

/// A field from hl7-dictionary alone (opt 2 = required, rep 0 = unbounded).
fn dict_field(d: &Value, default_rep: u64) -> Result<Field> {
    Ok(Field {
        name: clean(
            d["desc"]
                .as_str()
                .context("hl7-dictionary field without desc")?,
        ),
        dt: d["datatype"]
            .as_str()
            .context("hl7-dictionary field without datatype")?
            .to_string(),
        min: u32::from(d["opt"].as_u64() == Some(2)),
        max: match d["rep"].as_u64().unwrap_or(default_rep) {
            0 => None,
            n => Some(u32::try_from(n)?),
        },
        len: d["len"].as_u64().map(|n| n as u32),
        table: d["table"].as_u64().and_then(|t| u16::try_from(t).ok()),
    })
}

fn opt<T: std::fmt::Display>(v: &Option<T>) -> String {
    v.as_ref().map_or_else(String::new, T::to_string)
}
fn max_text(v: Option<u32>) -> String {
    v.map_or_else(|| "*".to_string(), |n| n.to_string())
}
fn check_text(s: &str) -> Result<&str> {
    ensure!(
        !s.contains(['\t', '\n']) && !s.is_empty(),
        "text {s:?} is empty or has a tab/newline"
    );
    Ok(s)
}

fn write_version(header: &str, v: &Version) -> Result<String> {
    let mut out = header.to_string();
    out.push_str(
        "\n# Segments: S id name / F name type min max length table (max * = unbounded).\n",
    );
    for (id, (name, fields)) in &v.segments {
        writeln!(out, "S\t{id}\t{}", check_text(name)?)?;
        for f in fields {
            writeln!(
                out,
                "F\t{}\t{}\t{}\t{}\t{}\t{}",
                check_text(&f.name)?,
                check_text(&f.dt)?,
                f.min,
                max_text(f.max),
                opt(&f.len),
                opt(&f.table)
            )?;
        }
    }
    out.push_str("\n# Data types: D id / C name type length table (no C lines: primitive).\n");
    for (id, comps) in &v.datatypes {
        writeln!(out, "D\t{}", check_text(id)?)?;
        for c in comps {
            writeln!(
                out,
                "C\t{}\t{}\t{}\t{}",
                check_text(&c.name)?,
                check_text(&c.dt)?,
                opt(&c.len),
                opt(&c.table)
            )?;
        }
    }
    out.push_str(
        "\n# Structures: M id, then one line per node indented two spaces per depth: \
         seg|group|choice name min max.\n",
    );
    fn nodes(out: &mut String, depth: usize, children: &[Node]) -> Result<()> {
        for n in children {
            let indent = "  ".repeat(depth);
            match n {
                Node::Seg { id, min, max } => {
                    writeln!(out, "{indent}seg\t{id}\t{min}\t{}", max_text(*max))?
                }
                Node::Group {
                    name,
                    choice,
                    min,
                    max,
                    children,
                } => {
                    let kind = if *choice { "choice" } else { "group" };
                    writeln!(
                        out,
                        "{indent}{kind}\t{}\t{min}\t{}",
                        check_text(name)?,
                        max_text(*max)
                    )?;
                    nodes(out, depth + 1, children)?;
                }
            }
        }
        Ok(())
    }
    for (id, children) in &v.structures {
        writeln!(out, "M\t{id}")?;
        nodes(&mut out, 1, children)?;
    }
    Ok(out)
}

fn write_tables(header: &str, versions: &[(&str, Version)]) -> Result<String> {
    let mut variants: BTreeMap<u16, Vec<(TableDef, Vec<&str>)>> = BTreeMap::new();
    for (ver, v) in versions {
        for (id, t) in &v.tables {
            let list = variants.entry(*id).or_default();
            match list.iter_mut().find(|(x, _)| x == t) {
                Some((_, vs)) => vs.push(ver),
                None => list.push((t.clone(), vec![ver])),
            }
        }
    }
    let mut out = header.to_string();
    out.push_str(
        "# T id versions name, then one line per code: tab code [tab display]. Codes sorted.\n",
    );
    for (id, list) in variants {
        for ((name, codes), vers) in list {
            writeln!(
                out,
                "T\t{id}\t{}\t{}",
                vers.join(" "),
                if name.is_empty() {
                    "-"
                } else {
                    check_text(&name)?
                }
            )?;
            for (code, display) in codes {
                match display {
                    Some(d) => writeln!(out, "\t{}\t{}", check_text(&code)?, check_text(&d)?)?,
                    None => writeln!(out, "\t{}", check_text(&code)?)?,
                }
            }
        }
    }
    Ok(out)
}

fn write_disagreements(
    header: &str,
    versions: &[(&str, Version)],
    dict_js: &dyn Fn(&str) -> Result<Value>,
) -> Result<String> {
    let mut out = header.to_string();
    for (ver, v) in versions {
        if !COMPARED.contains(ver) {
            continue;
        }
        let d = dict_js(&format!("{ver}/segments.js"))?;
        for (id, (_, fields)) in &v.segments {
            let Some(dfields) = d.get(id).and_then(|s| s["fields"].as_array()) else {
                continue;
            };
            if dfields.len() != fields.len() {
                writeln!(
                    out,
                    "{ver}\t{id}\tcount\t{}\t{}",
                    fields.len(),
                    dfields.len()
                )?;
            }
            for (i, (f, df)) in fields.iter().zip(dfields).enumerate() {
                let dt = df["datatype"].as_str().unwrap_or("");
                if f.dt != dt {
                    writeln!(out, "{ver}\t{id}-{}\ttype\t{}\t{dt}", i + 1, f.dt)?;
                }
                let rep = match df["rep"].as_u64() {
                    Some(0) => None,
                    Some(n) => Some(n as u32),
                    None => Some(1),
                };
                if f.max != rep {
                    writeln!(
                        out,
                        "{ver}\t{id}-{}\tmax\t{}\t{}",
                        i + 1,
                        max_text(f.max),
                        max_text(rep)
                    )?;
                }
            }
        }
    }
    Ok(out)
}

const NOTICE: &str = "The files in this directory are generated by `cargo xtask codegen` from the following sources.

hl7apy (https://github.com/crs4/hl7apy, commit 0297526c393d984b9e39b959484ee8207c1daa9c): message structures,
groups, segments, fields, data types, table ids and table codes.

    Copyright (c) 2012-2018, CRS4

    Permission is hereby granted, free of charge, to any person obtaining a copy of
    this software and associated documentation files (the \"Software\"), to deal in
    the Software without restriction, including without limitation the rights to
    use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies of
    the Software, and to permit persons to whom the Software is furnished to do so,
    subject to the following conditions:

    The above copyright notice and this permission notice shall be included in all
    copies or substantial portions of the Software.

    THE SOFTWARE IS PROVIDED \"AS IS\", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
    IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS
    FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR
    COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER
    IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN
    CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.

hl7-dictionary 1.0.1 (npm package hl7-dictionary, https://github.com/fernandojsg/hl7-dictionary): field and
component lengths, readable field, component, segment and table names, table code texts.

    Copyright (c) Fernando Serrano (author of hl7-dictionary; MIT License as declared in its package.json,
    which ships no separate licence file)

    Permission is hereby granted, free of charge, to any person obtaining a copy of
    this software and associated documentation files (the \"Software\"), to deal in
    the Software without restriction, including without limitation the rights to
    use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies of
    the Software, and to permit persons to whom the Software is furnished to do so,
    subject to the following conditions:

    The above copyright notice and this permission notice shall be included in all
    copies or substantial portions of the Software.

    THE SOFTWARE IS PROVIDED \"AS IS\", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
    IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS
    FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR
    COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER
    IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN
    CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.

HL7 Terminology (THO) 7.0.1 (npm package hl7.terminology.r4): table code displays (CodeSystem-v2-NNNN) and the
message structure of each trigger event (CodeSystem-v2-0354). Released by HL7 International under CC0 1.0
(public domain dedication), https://terminology.hl7.org/license.html.

HL7 and Health Level Seven are registered trademarks of Health Level Seven International.
";
