//! `cargo xtask codegen [--check] [--package TGZ]`: compiles the FHIR R4 definitions into the `fhir` crate.
//!
//! Reads `Bundle-types.json` and `Bundle-resources.json` (= profiles-types / profiles-resources) straight out of
//! the official `hl7.fhir.r4.examples` 4.0.1 npm package and writes two committed files:
//!
//! - `crates/fhir/src/generated/schema.rs`: one static table per type (ordered elements with name, cardinality,
//!   type(s), choice, XML representation and protobuf field numbers) that drives the generic element tree and
//!   all three formats;
//! - `crates/fhir/src/generated/fhir.proto`: the Protocol Buffers schema of the binary encoding, numbered from
//!   the same table so the two can never disagree.
//!
//! `--check` regenerates in memory and fails if the committed files differ (CI runs it).

use crate::generated::sha256_hex;
use anyhow::{Context, Result, bail, ensure};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The package the definitions come from: users fetch it with `npm pack hl7.fhir.r4.examples@4.0.1`.
pub(crate) const PACKAGE_FILE: &str = "hl7.fhir.r4.examples-4.0.1.tgz";
/// SHA-256 of that tarball; a different file would silently change the generated model.
pub(crate) const PACKAGE_SHA256: &str =
    "dce87f1b5b9341867033f7d1f544fa1b5232503f6d62813887ac6b8a8b6cb682";

/// Entry point: `args` are the words after `codegen`.
pub fn run(args: &[String]) -> Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut check = false;
    let mut package = root.join("../shared/data/fhir/packages").join(PACKAGE_FILE);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--check" => check = true,
            "--package" => package = PathBuf::from(it.next().context("--package needs a path")?),
            other => bail!("unknown codegen option {other:?} (expected --check, --package TGZ)"),
        }
    }
    let bytes = std::fs::read(&package).with_context(|| {
        format!(
            "reading {} (get it with `npm pack hl7.fhir.r4.examples@4.0.1` and pass --package)",
            package.display()
        )
    })?;
    let sha = sha256_hex(&bytes);
    ensure!(
        sha == PACKAGE_SHA256,
        "{} has sha256 {sha}, expected {PACKAGE_SHA256}",
        package.display()
    );
    let (types_bundle, resources_bundle) = read_bundles(&bytes)?;
    let model = Model::build(&[types_bundle, resources_bundle])?;
    let out = root.join("crates/fhir/src/generated");
    let files = [("schema.rs", model.rust()), ("fhir.proto", model.proto())];
    crate::generated::write_or_check(&out, &files, check, "fhir")
}

fn read_bundles(tgz: &[u8]) -> Result<(Value, Value)> {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(tgz));
    let (mut types, mut resources) = (None, None);
    for entry in archive.entries()? {
        let mut entry = entry?;
        let path = entry.path()?.to_string_lossy().into_owned();
        let slot = match path.as_str() {
            "package/Bundle-types.json" => &mut types,
            "package/Bundle-resources.json" => &mut resources,
            _ => continue,
        };
        let mut text = String::new();
        entry.read_to_string(&mut text)?;
        *slot = Some(serde_json::from_str(&text).with_context(|| format!("parsing {path}"))?);
    }
    Ok((
        types.context("package has no Bundle-types.json")?,
        resources.context("package has no Bundle-resources.json")?,
    ))
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Primitive(&'static str),
    Complex,
    Resource,
    Backbone,
    AnyResource,
}

struct Elem {
    json_name: String,
    min: u32,
    many: bool,
    types: Vec<usize>,
    choice: bool,
    repr: &'static str,
    tags: Vec<u32>,
}

struct Type {
    name: String,
    /// Protobuf message name (backbones: path segments joined by `_`).
    proto: String,
    kind: Kind,
    elems: Vec<Elem>,
}

struct Model {
    types: Vec<Type>,
    by_name: HashMap<String, usize>,
}

/// Pseudo-type of `Element.id` / `Extension.url`: a plain string, an XML attribute, never extended.
const SYSTEM_STRING: &str = "System.String";
const ANY_RESOURCE: &str = "Resource";

fn prim_kind(name: &str) -> &'static str {
    match name {
        "boolean" => "Boolean",
        "integer" | "positiveInt" | "unsignedInt" => "Integer",
        "decimal" => "Decimal",
        "xhtml" => "Xhtml",
        SYSTEM_STRING => "SystemString",
        _ => "String",
    }
}

fn upper_first(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

fn snake(s: &str) -> String {
    let mut out = String::new();
    for ch in s.chars() {
        if ch.is_ascii_uppercase() {
            if !out.is_empty() {
                out.push('_');
            }
            out.push(ch.to_ascii_lowercase());
        } else {
            out.push(ch);
        }
    }
    out
}

impl Model {
    fn build(bundles: &[Value]) -> Result<Model> {
        let mut sds = Vec::new();
        for b in bundles {
            for e in b["entry"].as_array().context("bundle without entries")? {
                let r = &e["resource"];
                let kind = r["kind"].as_str().unwrap_or("");
                if r["resourceType"] == "StructureDefinition"
                    && r["derivation"] == "specialization"
                    && r["abstract"] != true
                    && matches!(kind, "primitive-type" | "complex-type" | "resource")
                {
                    sds.push(r);
                }
            }
        }
        let mut m = Model {
            types: Vec::new(),
            by_name: HashMap::new(),
        };
        // Primitives first, then the two pseudo-types, complex types, resources; backbones as met.
        for pass in ["primitive-type", "pseudo", "complex-type", "resource"] {
            if pass == "pseudo" {
                m.add(
                    SYSTEM_STRING,
                    SYSTEM_STRING,
                    Kind::Primitive(prim_kind(SYSTEM_STRING)),
                );
                m.add(ANY_RESOURCE, ANY_RESOURCE, Kind::AnyResource);
                continue;
            }
            for sd in sds.iter().filter(|sd| sd["kind"] == pass) {
                let name = sd["type"].as_str().context("SD without type")?;
                let kind = match pass {
                    "primitive-type" => Kind::Primitive(prim_kind(name)),
                    "complex-type" => Kind::Complex,
                    _ => Kind::Resource,
                };
                m.add(name, name, kind);
            }
        }
        for sd in &sds {
            if sd["kind"] == "primitive-type" {
                continue;
            }
            let elements = sd["snapshot"]["element"]
                .as_array()
                .context("SD without snapshot")?;
            m.walk(elements)?;
        }
        m.number();
        Ok(m)
    }

    fn add(&mut self, name: &str, proto: &str, kind: Kind) -> usize {
        self.types.push(Type {
            name: name.into(),
            proto: proto.into(),
            kind,
            elems: Vec::new(),
        });
        self.by_name.insert(name.into(), self.types.len() - 1);
        self.types.len() - 1
    }

    /// Fills the element lists of one StructureDefinition's root type and its backbone elements.
    fn walk(&mut self, elements: &[Value]) -> Result<()> {
        let root = elements[0]["path"]
            .as_str()
            .context("element without path")?;
        // Backbone paths first, so `contentReference`s (which may point forward) resolve.
        let mut owner: HashMap<String, usize> = HashMap::new();
        owner.insert(root.to_string(), self.by_name[root]);
        for (i, el) in elements.iter().enumerate() {
            let path = el["path"].as_str().context("element without path")?;
            let has_children = elements
                .get(i + 1)
                .and_then(|n| n["path"].as_str())
                .is_some_and(|n| n.starts_with(path) && n[path.len()..].starts_with('.'));
            if i > 0 && has_children {
                let proto = path
                    .split('.')
                    .map(upper_first)
                    .collect::<Vec<_>>()
                    .join("_");
                ensure!(
                    !self.by_name.contains_key(path),
                    "duplicate backbone {path}"
                );
                let id = self.add(path, &proto, Kind::Backbone);
                owner.insert(path.to_string(), id);
            }
        }
        for el in &elements[1..] {
            let path = el["path"].as_str().unwrap_or_default();
            let (parent, last) = path
                .rsplit_once('.')
                .context("element path without parent")?;
            let parent_ty = *owner
                .get(parent)
                .with_context(|| format!("no owner for {path}"))?;
            let choice = last.ends_with("[x]");
            let name = last.trim_end_matches("[x]").to_string();
            let repr_list: Vec<&str> = el["representation"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let repr = if repr_list.contains(&"xmlAttr") {
                "Attr"
            } else {
                "Element"
            };
            let mut types = Vec::new();
            if let Some(r) = el["contentReference"].as_str() {
                let target = r.trim_start_matches('#');
                types.push(
                    *owner
                        .get(target)
                        .with_context(|| format!("unresolved {r}"))?,
                );
            } else if let Some(&own) = owner.get(path) {
                types.push(own);
            } else {
                for t in el["type"]
                    .as_array()
                    .with_context(|| format!("{path} has no type"))?
                {
                    let code = t["code"].as_str().context("type without code")?;
                    let code = match code {
                        "http://hl7.org/fhirpath/System.String" if repr == "Attr" => SYSTEM_STRING,
                        // `Resource.id`: JSON/XML treat it as an ordinary `id` primitive.
                        "http://hl7.org/fhirpath/System.String" if name == "id" => "id",
                        other => other,
                    };
                    types.push(
                        *self
                            .by_name
                            .get(code)
                            .with_context(|| format!("{path}: unknown type {code}"))?,
                    );
                }
            }
            let max = el["max"].as_str().unwrap_or("1");
            let min = el["min"].as_u64().unwrap_or(0) as u32;
            self.types[parent_ty].elems.push(Elem {
                json_name: name,
                min,
                many: max != "1" && max != "0",
                types,
                choice,
                repr,
                tags: Vec::new(),
            });
        }
        Ok(())
    }

    fn is_extensible_primitive(&self, t: usize) -> bool {
        matches!(self.types[t].kind, Kind::Primitive(k) if k != "SystemString" && k != "Xhtml")
    }

    /// Assigns protobuf field numbers: one per (element, type alternative), plus one for the id/extension
    /// companion of every extensible primitive.
    fn number(&mut self) {
        for ti in 0..self.types.len() {
            let mut next = 1u32;
            for ei in 0..self.types[ti].elems.len() {
                let mut tags = Vec::new();
                for &t in &self.types[ti].elems[ei].types.clone() {
                    tags.push(next);
                    next += if self.is_extensible_primitive(t) {
                        2
                    } else {
                        1
                    };
                    // 19000..19999 are reserved by protobuf.
                    if (19000..20000).contains(&next) {
                        next = 20000;
                    }
                }
                self.types[ti].elems[ei].tags = tags;
            }
        }
    }

    fn choice_suffix(&self, t: usize) -> String {
        upper_first(&self.types[t].name)
    }

    fn rust(&self) -> String {
        let mut s = String::new();
        s.push_str(&format!(
            "// @generated by `cargo xtask codegen` from {PACKAGE_FILE} (sha256 {PACKAGE_SHA256}).\n\
             // Do not edit: change xtask/src/codegen_fhir.rs and regenerate.\n\n\
             use crate::schema::{{ElemDef, Kind, PrimKind, Repr, TypeDef, TypeId}};\n\n"
        ));
        let idx = |n: &str| self.by_name[n];
        for (c, n) in [("EXTENSION", "Extension"), ("BUNDLE", "Bundle")] {
            let _ = writeln!(
                s,
                "/// The `{n}` type.\npub(crate) const {c}: TypeId = TypeId({});",
                idx(n)
            );
        }
        let _ = writeln!(
            s,
            "\n/// Every type of FHIR R4, indexed by [`TypeId`].\npub(crate) static TYPES: [TypeDef; {}] = [",
            self.types.len()
        );
        for t in &self.types {
            let kind = match t.kind {
                Kind::Primitive(p) => format!("Kind::Primitive(PrimKind::{p})"),
                Kind::Complex => "Kind::Complex".into(),
                Kind::Resource => "Kind::Resource".into(),
                Kind::Backbone => "Kind::Backbone".into(),
                Kind::AnyResource => "Kind::AnyResource".into(),
            };
            let _ = writeln!(
                s,
                "    TypeDef {{\n        name: {:?},\n        kind: {kind},\n        elements: &[",
                t.name
            );
            for e in &t.elems {
                let types: Vec<String> = e.types.iter().map(|t| format!("TypeId({t})")).collect();
                let tags: Vec<String> = e.tags.iter().map(u32::to_string).collect();
                let _ = writeln!(
                    s,
                    "            ElemDef {{ name: {:?}, min: {}, many: {}, choice: {}, repr: Repr::{}, types: &[{}], tags: &[{}] }},",
                    e.json_name,
                    e.min,
                    e.many,
                    e.choice,
                    e.repr,
                    types.join(", "),
                    tags.join(", ")
                );
            }
            s.push_str("        ],\n        lookup: &[");
            let mut names: BTreeMap<String, (usize, usize)> = BTreeMap::new();
            for (ei, e) in t.elems.iter().enumerate() {
                if e.choice {
                    for (ai, &ty) in e.types.iter().enumerate() {
                        names.insert(
                            format!("{}{}", e.json_name, self.choice_suffix(ty)),
                            (ei, ai),
                        );
                    }
                } else {
                    names.insert(e.json_name.clone(), (ei, 0));
                }
            }
            for (n, (ei, ai)) in &names {
                let _ = write!(s, "({n:?}, {ei}, {ai}), ");
            }
            s.push_str("],\n        by_tag: &[");
            let max_tag = t
                .elems
                .iter()
                .flat_map(|e| e.tags.iter())
                .max()
                .copied()
                .unwrap_or(0);
            let mut by_tag = vec!["(u16::MAX, 0)".to_string(); max_tag as usize + 2];
            for (ei, e) in t.elems.iter().enumerate() {
                for (ai, &tag) in e.tags.iter().enumerate() {
                    by_tag[tag as usize] = format!("({ei}, {ai})");
                }
            }
            // Companion tags (tag + 1 of an extensible primitive) stay u16::MAX: the decoder checks tag - 1.
            s.push_str(&by_tag.join(", "));
            s.push_str("],\n    },\n");
        }
        s.push_str("];\n\n");
        let mut resources: Vec<(&str, usize)> = self
            .types
            .iter()
            .enumerate()
            .filter(|(_, t)| t.kind == Kind::Resource)
            .map(|(i, t)| (t.name.as_str(), i))
            .collect();
        resources.sort();
        let _ = writeln!(
            s,
            "/// Concrete resource types by name (sorted); the position + 1 is the field number in the `Resource` message.\npub(crate) static RESOURCES: [(&str, TypeId); {}] = [",
            resources.len()
        );
        for (n, i) in &resources {
            let _ = writeln!(s, "    ({n:?}, TypeId({i})),");
        }
        s.push_str("];\n");
        s
    }

    fn proto_scalar(&self, t: usize) -> &'static str {
        match self.types[t].kind {
            Kind::Primitive("Boolean") => "bool",
            Kind::Primitive("Integer") => "sint64",
            _ => "string",
        }
    }

    fn proto(&self) -> String {
        let mut s = String::new();
        s.push_str(&format!(
            "// @generated by `cargo xtask codegen` from {PACKAGE_FILE} (sha256 {PACKAGE_SHA256}).\n\
             // Do not edit. The binary encoding of Thoth's FHIR R4 model: one message per type, one field per\n\
             // element (choice elements: one field per type), and for each extensible primitive element a\n\
             // companion `<name>_element` field that carries its id and extensions. For repeated primitives the\n\
             // companion, when present, has one entry per item and `no_value` marks items that only carry\n\
             // extensions (JSON's `null` padding). Decimals are strings to keep their lexical form.\n\
             // String table: strings of 256 bytes or more (and any starting with U+0000) go, one entry per use, to the\n\
             // outermost Resource's table and the string field holds a reference instead: U+0000 followed by the\n\
             // entry's index in decimal ASCII (\"\\u0000\" \"12\"). The table is `strings`, or when it is large the\n\
             // zstd frame `strings_zstd` (content size declared) of a `StringTable`; writers put it first.\n\n\
             syntax = \"proto3\";\n\npackage thoth.fhir.r4;\n\n\
             // Id and extensions of a primitive value.\n\
             message PrimitiveElement {{\n  string id = 1;\n  repeated Extension extension = 2;\n  bool no_value = 3;\n}}\n\n\
             // Any resource: exactly one field is set.\nmessage Resource {{\n  oneof resource {{\n"
        ));
        let mut resources: Vec<&Type> = self
            .types
            .iter()
            .filter(|t| t.kind == Kind::Resource)
            .collect();
        resources.sort_by(|a, b| a.name.cmp(&b.name));
        for (i, t) in resources.iter().enumerate() {
            let _ = writeln!(s, "    {} {} = {};", t.proto, snake(&t.name), i + 1);
        }
        s.push_str(
            "  }\n  // The string table (outermost Resource only): plain, or zstd-compressed `StringTable`.\n  \
             repeated string strings = 200;\n  bytes strings_zstd = 201;\n}\n\n\
             // The entries of `Resource.strings_zstd` once decompressed.\n\
             message StringTable {\n  repeated string strings = 1;\n}\n",
        );
        for t in &self.types {
            if !matches!(t.kind, Kind::Complex | Kind::Resource | Kind::Backbone) {
                continue;
            }
            let _ = write!(s, "\n// {}\nmessage {} {{\n", t.name, t.proto);
            for e in &t.elems {
                for (ai, &ty) in e.types.iter().enumerate() {
                    let base = if e.choice {
                        format!("{}{}", e.json_name, self.choice_suffix(ty))
                    } else {
                        e.json_name.clone()
                    };
                    let field = snake(&base);
                    let tag = e.tags[ai];
                    let rep = if e.many { "repeated " } else { "" };
                    match self.types[ty].kind {
                        Kind::Primitive(_) => {
                            let opt = if e.many { "repeated " } else { "optional " };
                            let _ =
                                writeln!(s, "  {opt}{} {field} = {tag};", self.proto_scalar(ty));
                            if self.is_extensible_primitive(ty) {
                                let _ = writeln!(
                                    s,
                                    "  {rep}PrimitiveElement {field}_element = {};",
                                    tag + 1
                                );
                            }
                        }
                        Kind::AnyResource => {
                            let _ = writeln!(s, "  {rep}Resource {field} = {tag};");
                        }
                        _ => {
                            let _ = writeln!(s, "  {rep}{} {field} = {tag};", self.types[ty].proto);
                        }
                    }
                }
            }
            s.push_str("}\n");
        }
        s
    }
}
