//! `thoth hl7`: JSON view, path reads, re-encoding, ACKs, checks and validation over files of HL7 v2 messages,
//! and the version definitions (`describe`).
//!
//! Every subcommand but `describe` takes FILEs (`-` for stdin; shell globs work), each holding one message, many
//! messages or a batch file, and walks each with `hl7v2::split`, one chunk at a time.

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use hl7v2::{
    AckCode, AckMode, ChunkKind, IssueSeverity, Message, MessageBuf, Profile, Rule, Severity,
    Version,
};

use crate::data_dir::{DataArg, GlobalArgs};

/// Options of `thoth hl7`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand, Debug)]
enum Command {
    /// Print the JSON view of each message (shape: see the hl7v2 crate's `to_json`).
    Json {
        /// Files of messages (`-` for stdin).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// One JSON object per line instead of pretty-printed.
        #[arg(long)]
        compact: bool,
    },
    /// Print the values at Terser-style paths: for each message, one line per path, in the order given.
    ///
    /// Flat paths name a segment by its occurrence (`PID-5-1`; `OBX(2)-5` is the third OBX: parentheses are
    /// 0-based as in HAPI, `OBX[3]-5` is the same in 1-based brackets; `PID-3(1)-1` is the second repetition of
    /// PID-3). Group paths follow the message structure: `/PATIENT_RESULT/ORDER_OBSERVATION(1)/OBX(2)-5`, or
    /// `/.OBX-5` for the first OBX wherever it stands. A missing value prints an empty line and is reported.
    Get {
        /// Files of messages (`-` for stdin) and one or more paths, in any order: an argument that names a file
        /// is a file, any other must be a path, e.g. `MSH-10 PID-3[2]-1 /PATIENT_RESULT/PATIENT/PID-5`. With
        /// several files each line starts with its file's name.
        #[arg(required = true, value_name = "FILE|PATH")]
        args: Vec<String>,
        /// Print the raw (escaped) bytes at the path's depth instead of decoded text (`PID-5` → `DOE^JOHN`).
        #[arg(long)]
        raw: bool,
        /// A path with no value prints an empty line and is not an error (by default it is reported on stderr
        /// and the exit code is 1).
        #[arg(long)]
        missing_ok: bool,
    },
    /// Re-encode to stdout: byte for byte unless edits are given.
    Fmt {
        /// Files of messages (`-` for stdin).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Set a value in every message before encoding, e.g. `--set PID-5-1=DOE` (repeatable).
        #[arg(long = "set", value_name = "PATH=VALUE")]
        set: Vec<String>,
        /// Remove every segment with this identifier (repeatable).
        #[arg(long = "remove", value_name = "SEGMENT")]
        remove: Vec<String>,
    },
    /// Print an acknowledgement for each message.
    Ack {
        /// Files of messages (`-` for stdin).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// AA, AE, AR (original mode) or CA, CE, CR (enhanced). Default: accept (AA or CA by the message's mode),
        /// or reject (AR or CR, with ERR segments) when the message has parse errors.
        #[arg(long)]
        code: Option<String>,
        /// MSA-3 text.
        #[arg(long)]
        text: Option<String>,
    },
    /// Print diagnostics; exit code 1 if any message has an error.
    Check {
        /// Files of messages (`-` for stdin).
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Validate each message against its version's definitions (structure, required fields, repetitions, data
    /// types, tables, lengths); exit code 1 if any message has an error.
    // `--version` is the HL7 version here, not the program's (which `thoth --version` prints).
    #[command(disable_version_flag = true)]
    Validate {
        /// Files of messages (`-` for stdin).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Validate against this version whatever MSH-12 says (default: MSH-12, else 2.5.1).
        #[arg(long)]
        version: Option<String>,
        /// Strict profile: Z-segments, user-table values, lengths and extra fields are errors, not warnings.
        #[arg(long)]
        strict: bool,
        /// Set a rule's severity, e.g. `--rule table-value=ignore` (`error`, `warning`, `ignore`; repeatable).
        #[arg(long = "rule", value_name = "RULE=SEVERITY")]
        rules: Vec<String>,
        /// `text`: a summary line per message and a line per issue; `json`: one JSON object per message per line.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Convert each message to a FHIR R4 Bundle by the HL7 Version 2 to FHIR implementation guide. JSON Bundles
    /// are written one per line; with `--report`, the conversion report (what was not mapped, and where) goes to
    /// stderr as JSON lines. With `--data DIR` (or THOTH_DATA), codes are checked by the terminology content of
    /// that data directory: displays filled in, codes that are not valid kept as sent and reported.
    ToFhir {
        /// Files of messages (`-` for stdin).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// The kind of Bundle.
        #[arg(long, value_enum, default_value_t = BundleArg::Message)]
        bundle: BundleArg,
        /// Print the conversion report to stderr.
        #[arg(long)]
        report: bool,
        /// Output format: `json` (one Bundle per line), `xml` or `pb` (the binary encoding, length-delimited).
        #[arg(long, value_enum, default_value_t = FhirFormat::Json)]
        format: FhirFormat,
        /// The memory one message's conversion may take, in MiB: a message that needs more is reported and
        /// skipped (the Bundle of a message of many small elements takes about a hundred times its size).
        #[arg(long, value_name = "MIB", default_value_t = v2fhir::DEFAULT_MAX_MEMORY >> 20)]
        max_memory: usize,
        /// The IANA time zone (`America/Chicago`) of times sent without a UTC offset, which v2 reads as the
        /// sender's local time: each gets the offset the zone had then. Without it, such a time keeps only its
        /// date (an `instant` is left out), and the report says so.
        #[arg(long, value_name = "ZONE", value_parser = v2fhir::time_zone)]
        time_zone: Option<v2fhir::TimeZone>,
        #[command(flatten)]
        data: DataArg,
    },
    /// Print a message structure (`ADT^A04`, `ADT_A01`), a segment (`PID`), a field (`PID-11`) or a data type
    /// (`XAD`) as a version defines it.
    #[command(disable_version_flag = true)]
    Describe {
        /// `TYPE^EVENT`, a structure id, a segment id, `SEG-N` (a field), `SEG-N-M` (a component) or a data type.
        what: String,
        /// The HL7 v2 version.
        #[arg(long, default_value = "2.5.1")]
        version: String,
    },
}

/// Bundle kind of `thoth hl7 to-fhir`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum BundleArg {
    Message,
    Transaction,
    Collection,
}

/// Output format of `thoth hl7 to-fhir`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum FhirFormat {
    Json,
    Xml,
    Pb,
}

/// Output format of `thoth hl7 validate`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Text,
    Json,
}

pub fn run(global: &GlobalArgs, args: Args) -> anyhow::Result<()> {
    let stdout = std::io::stdout();
    let terminal = stdout.is_terminal();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match args.command {
        Command::Json { files, compact } => {
            for file in &files {
                let input = read_input(file)?;
                for msg in hl7v2::messages(&input) {
                    let json = hl7v2::to_json(&msg);
                    if compact {
                        writeln!(out, "{json}")?;
                    } else {
                        writeln!(out, "{json:#}")?;
                    }
                }
            }
        }
        Command::Get {
            args,
            raw,
            missing_ok,
        } => {
            let (files, paths) = files_and_paths(&args)?;
            let mut missing = 0usize;
            for file in &files {
                let input = read_input(file)?;
                let prefix = if files.len() > 1 {
                    format!("{}:", file.display())
                } else {
                    String::new()
                };
                for (n, msg) in hl7v2::messages(&input).enumerate() {
                    for (text, path) in &paths {
                        out.write_all(prefix.as_bytes())?;
                        let found = if raw {
                            let value = msg.raw(path);
                            out.write_all(value.unwrap_or_default())?;
                            value.is_some()
                        } else {
                            let value = msg.get(path);
                            out.write_all(value.as_deref().unwrap_or_default().as_bytes())?;
                            value.is_some()
                        };
                        out.write_all(b"\n")?;
                        if !found && !missing_ok {
                            missing += 1;
                            out.flush()?;
                            eprintln!("{}: message {}: {text} has no value", file.display(), n + 1);
                        }
                    }
                }
            }
            out.flush()?;
            if missing > 0 {
                bail!(
                    "{missing} path(s) had no value (--missing-ok prints an empty line without failing)"
                );
            }
        }
        Command::Fmt { files, set, remove } => {
            let edits = set
                .iter()
                .map(|s| {
                    let (p, v) = s
                        .split_once('=')
                        .with_context(|| format!("--set {s:?}: expected PATH=VALUE"))?;
                    Ok((hl7v2::Path::parse(p)?, v.to_owned()))
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            for file in &files {
                let input = read_input(file)?;
                for chunk in hl7v2::split(&input) {
                    if chunk.kind != ChunkKind::Message || (edits.is_empty() && remove.is_empty()) {
                        out.write_all(chunk.bytes)?;
                        continue;
                    }
                    let msg = chunk.parse();
                    let mut buf = MessageBuf::from(&msg);
                    for id in &remove {
                        buf.remove_segments(id);
                    }
                    for (path, value) in &edits {
                        buf.set(path, value).with_context(|| {
                            format!("message at byte {}: setting {path}", chunk.offset)
                        })?;
                    }
                    out.write_all(&buf.encode())?;
                }
            }
        }
        Command::Ack { files, code, text } => {
            let code = code
                .map(|c| {
                    AckCode::parse(&c)
                        .with_context(|| format!("unknown acknowledgement code {c:?}"))
                })
                .transpose()?;
            for file in &files {
                let input = read_input(file)?;
                for msg in hl7v2::messages(&input) {
                    let code = code.unwrap_or_else(|| default_code(&msg));
                    if !msg.ack_required(code) {
                        eprintln!(
                            "message {}: MSH-15/MSH-16 ask for no {code} acknowledgement; none printed",
                            msg.get("MSH-10").unwrap_or_default()
                        );
                        continue;
                    }
                    let mut ack = msg.ack(code);
                    if let Some(t) = &text {
                        ack = ack.text(t.clone());
                    }
                    if !code.is_success() {
                        ack = ack.errors_from_diagnostics();
                    }
                    let mut bytes = ack.build();
                    if terminal {
                        // CR alone would make each segment overwrite the previous one on screen.
                        for b in &mut bytes {
                            if *b == b'\r' {
                                *b = b'\n';
                            }
                        }
                    }
                    out.write_all(&bytes)?;
                }
            }
        }
        Command::Check { files } => {
            let mut failed = false;
            for file in &files {
                let input = read_input(file)?;
                let name = file.display().to_string();
                let (messages, errors, warnings) = check(&input, &name, &mut out)?;
                out.flush()?;
                eprintln!(
                    "{name}: {messages} message(s), {errors} error(s), {warnings} warning(s)"
                );
                failed |= errors > 0;
            }
            if failed {
                std::process::exit(1);
            }
        }
        Command::Validate {
            files,
            version,
            strict,
            rules,
            format,
        } => {
            let version = version.as_deref().map(parse_version).transpose()?;
            let mut profile = if strict {
                Profile::strict()
            } else {
                Profile::lenient()
            };
            for r in &rules {
                let (rule, severity) = parse_rule(r)?;
                profile = profile.with(rule, severity);
            }
            let mut failed = false;
            for file in &files {
                let input = read_input(file)?;
                let name = file.display().to_string();
                let summary = validate(&input, version, &profile, format, &mut out)?;
                out.flush()?;
                if summary.messages == 0 {
                    bail!("{name}: no HL7 v2 message (no segment starts with MSH)");
                }
                eprintln!(
                    "{name}: {} message(s), {} invalid, {} error(s), {} warning(s)",
                    summary.messages, summary.invalid, summary.errors, summary.warnings
                );
                failed |= summary.invalid > 0;
            }
            if failed {
                std::process::exit(1);
            }
        }
        Command::ToFhir {
            files,
            bundle,
            report,
            format,
            max_memory,
            time_zone,
            data,
        } => {
            let checker = global.with(&data).given_data_dir().map(|dir| {
                let snomed = crate::cmd::snomed::open_store(dir);
                server::TerminologyChecker(crate::cmd::terminology::load_service(
                    dir,
                    terminology::Config::default().max_expansion,
                    snomed,
                ))
            });
            let options = v2fhir::Options {
                bundle: match bundle {
                    BundleArg::Message => v2fhir::BundleType::Message,
                    BundleArg::Transaction => v2fhir::BundleType::Transaction,
                    BundleArg::Collection => v2fhir::BundleType::Collection,
                },
                checker: checker.as_ref().map(|c| c as &dyn v2fhir::CodeChecker),
                max_memory: max_memory.saturating_mul(1 << 20),
                time_zone: time_zone.as_ref(),
            };
            let mut failed = false;
            for file in &files {
                let input = read_input(file)?;
                let mut count = 0;
                for msg in hl7v2::messages(&input) {
                    count += 1;
                    let conv = match v2fhir::convert(&msg, &options) {
                        Ok(conv) => conv,
                        // The other messages still convert; the run ends in failure.
                        Err(e) => {
                            eprintln!("{}: message {count}: {e}", file.display());
                            failed = true;
                            continue;
                        }
                    };
                    match format {
                        FhirFormat::Json => {
                            out.write_all(&conv.json)?;
                            out.write_all(b"\n")?;
                        }
                        FhirFormat::Xml | FhirFormat::Pb => {
                            let bundle = fhir::Resource::from_json(&conv.json)
                                .context("the converted Bundle does not read back as FHIR")?;
                            if format == FhirFormat::Xml {
                                out.write_all(&bundle.to_xml(true)?)?;
                                out.write_all(b"\n")?;
                            } else {
                                let pb = bundle.to_protobuf()?;
                                write_varint(&mut out, pb.len() as u64)?;
                                out.write_all(&pb)?;
                            }
                        }
                    }
                    if report {
                        eprint!("{}", conv.report_json());
                    }
                }
                out.flush()?;
                if count == 0 {
                    bail!(
                        "{}: no HL7 v2 message (no segment starts with MSH)",
                        file.display()
                    );
                }
            }
            if failed {
                out.flush()?;
                std::process::exit(1);
            }
        }
        Command::Describe { what, version } => {
            let version = parse_version(&version)?;
            describe(version.definitions(), what.trim(), &mut out)?;
        }
    }
    out.flush()?;
    Ok(())
}

/// Accept, or reject when the message did not parse cleanly; commit codes in enhanced mode.
fn default_code(msg: &Message<'_>) -> AckCode {
    match (msg.ack_mode(), msg.has_errors()) {
        (AckMode::Original, false) => AckCode::AA,
        (AckMode::Original, true) => AckCode::AR,
        (AckMode::Enhanced, false) => AckCode::CA,
        (AckMode::Enhanced, true) => AckCode::CR,
    }
}

/// Prints every diagnostic as `FILE:OFFSET: message N: ...`; returns (messages, errors, warnings).
fn check(input: &[u8], name: &str, out: &mut impl Write) -> anyhow::Result<(usize, usize, usize)> {
    let (mut messages, mut errors, mut warnings) = (0, 0, 0);
    for chunk in hl7v2::split(input) {
        if chunk.kind == ChunkKind::Other {
            if !chunk.bytes.iter().all(u8::is_ascii_whitespace) {
                errors += 1;
                writeln!(
                    out,
                    "{name}:{}: error: text that is not an HL7 segment",
                    chunk.offset
                )?;
            }
            continue;
        }
        let msg = chunk.parse();
        let label = if chunk.kind == ChunkKind::Message {
            messages += 1;
            format!("message {messages}")
        } else {
            format!("{:?}", chunk.kind)
        };
        for d in msg.diagnostics() {
            match d.severity() {
                Severity::Error => errors += 1,
                Severity::Warning => warnings += 1,
            }
            writeln!(
                out,
                "{name}:{}: {label}: {d}",
                chunk.offset + d.location.offset
            )?;
        }
    }
    Ok((messages, errors, warnings))
}

fn parse_version(text: &str) -> anyhow::Result<Version> {
    Version::parse(text).with_context(|| {
        let all: Vec<_> = Version::ALL.iter().map(|v| v.as_str()).collect();
        format!("unknown HL7 v2 version {text:?}; one of {}", all.join(", "))
    })
}

/// `table-value=ignore` → the rule and its severity (`None`: ignored).
fn parse_rule(text: &str) -> anyhow::Result<(Rule, Option<IssueSeverity>)> {
    let (name, severity) = text
        .split_once('=')
        .with_context(|| format!("--rule {text:?}: expected RULE=SEVERITY"))?;
    let rule = Rule::from_name(name.trim()).with_context(|| {
        let all: Vec<_> = Rule::ALL.iter().map(|r| r.name()).collect();
        format!("--rule {text:?}: unknown rule; one of {}", all.join(", "))
    })?;
    let severity = match severity.trim() {
        "error" => Some(IssueSeverity::Error),
        "warning" => Some(IssueSeverity::Warning),
        "ignore" => None,
        other => bail!("--rule {text:?}: severity {other:?} is not error, warning or ignore"),
    };
    Ok((rule, severity))
}

#[derive(Default)]
struct Summary {
    messages: usize,
    invalid: usize,
    errors: usize,
    warnings: usize,
}

/// A protobuf varint length prefix (the length-delimited stream convention).
fn write_varint(out: &mut impl Write, mut n: u64) -> std::io::Result<()> {
    loop {
        let b = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            return out.write_all(&[b]);
        }
        out.write_all(&[b | 0x80])?;
    }
}

/// Validates each message of `input`, printing its report (the JSON shape is the server's, so the CLI and
/// `POST /hl7/validate` agree; the text format is rendered from it).
fn validate(
    input: &[u8],
    version: Option<Version>,
    profile: &Profile,
    format: Format,
    out: &mut impl Write,
) -> anyhow::Result<Summary> {
    let options = server::validation_parse_options(version);
    let mut s = Summary::default();
    for chunk in hl7v2::split(input) {
        if chunk.kind != ChunkKind::Message {
            continue;
        }
        s.messages += 1;
        let msg = chunk.parse_with(&options);
        let json = server::validation_json(&msg, &hl7v2::validate(&msg, profile));
        let issues = json["issues"].as_array().map_or(&[][..], Vec::as_slice);
        let count = |sev: &str| issues.iter().filter(|i| i["severity"] == sev).count();
        let (errors, warnings) = (count("error"), count("warning"));
        let valid = json["valid"] == true;
        s.errors += errors;
        s.warnings += warnings;
        s.invalid += usize::from(!valid);
        if format == Format::Json {
            writeln!(out, "{json}")?;
            continue;
        }
        let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_owned();
        writeln!(
            out,
            "message {} (byte {}, MSH-10 {:?}): {} v{}: {}, {errors} error(s), {warnings} warning(s)",
            s.messages,
            chunk.offset,
            text(&json["control_id"]),
            json["structure"].as_str().unwrap_or("unknown structure"),
            text(&json["version"]),
            if valid { "valid" } else { "INVALID" },
        )?;
        for i in issues {
            writeln!(
                out,
                "  {} {} {} [{}]: {}",
                text(&i["severity"]),
                text(&i["code"]),
                text(&i["path"]),
                text(&i["rule"]),
                text(&i["message"]),
            )?;
        }
    }
    Ok(s)
}

/// `[1..1]`, `[0..*]`.
fn cardinality(min: u32, max: Option<u32>) -> String {
    match max {
        Some(max) => format!("[{min}..{max}]"),
        None => format!("[{min}..*]"),
    }
}

fn describe(defs: &hl7v2::Definitions, what: &str, out: &mut impl Write) -> anyhow::Result<()> {
    let version = defs.version();
    if let Some((ty, event)) = what.split_once('^') {
        let s = defs
            .structure_of_event(ty.trim(), event.trim())
            .with_context(|| format!("HL7 v{version} has no message structure for {what}"))?;
        writeln!(out, "{what}: message structure {} (HL7 v{version})", s.id)?;
        return describe_structure(defs, &s.children, 0, out);
    }
    // `PID-11`, `PID-11-1`: a field or a component.
    let mut parts = what.split('-');
    let seg_id = parts.next().unwrap_or_default();
    let numbers = parts
        .map(|p| p.trim().parse::<usize>().ok().filter(|n| *n > 0))
        .collect::<Option<Vec<_>>>()
        .with_context(|| format!("{what:?}: expected SEG-FIELD[-COMPONENT], numbers from 1"))?;
    if let Some((&field, rest)) = numbers.split_first() {
        let seg = defs
            .segment(seg_id)
            .with_context(|| format!("HL7 v{version} defines no segment {seg_id}"))?;
        let f = seg.fields.get(field - 1).with_context(|| {
            format!("{seg_id} has {} fields in HL7 v{version}", seg.fields.len())
        })?;
        let mut line = format!(
            "{seg_id}-{field} {}: {} {}",
            f.name,
            f.data_type,
            cardinality(f.min, f.max)
        );
        push_facts(defs, &mut line, f.length, f.table);
        let mut data_type = &*f.data_type;
        for (depth, &n) in rest.iter().enumerate() {
            let dt = defs
                .data_type(data_type)
                .filter(|d| !d.components.is_empty())
                .with_context(|| {
                    format!(
                        "{line}
{data_type} has no components"
                    )
                })?;
            let c = dt.components.get(n - 1).with_context(|| {
                format!(
                    "{line}
{data_type} has {} components",
                    dt.components.len()
                )
            })?;
            let path: Vec<String> = std::iter::once(field)
                .chain(rest[..=depth].iter().copied())
                .map(|n| n.to_string())
                .collect();
            line = format!("{seg_id}-{} {}: {}", path.join("-"), c.name, c.data_type);
            push_facts(defs, &mut line, c.length, c.table);
            data_type = &c.data_type;
        }
        writeln!(out, "{line} (HL7 v{version})")?;
        return describe_components(defs, data_type, out);
    }
    if let Some(seg) = defs.segment(what) {
        writeln!(out, "{} {} (HL7 v{version})", seg.id, seg.name)?;
        let tw = seg
            .fields
            .iter()
            .map(|f| f.data_type.len())
            .max()
            .unwrap_or(0)
            .max(4);
        let width = seg
            .fields
            .iter()
            .map(|f| f.name.chars().count())
            .max()
            .unwrap_or(0);
        writeln!(
            out,
            "{:>4}  {:width$}  {:tw$}  {:8}  {:>6}  table",
            "#", "name", "type", "card.", "length"
        )?;
        for (i, f) in seg.fields.iter().enumerate() {
            writeln!(
                out,
                "{:>4}  {:width$}  {:tw$}  {:8}  {:>6}  {}",
                i + 1,
                f.name,
                f.data_type,
                cardinality(f.min, f.max),
                f.length.map(|l| l.to_string()).unwrap_or_default(),
                table_name(defs, f.table),
            )?;
        }
        return Ok(());
    }
    if defs.data_type(what).is_some() {
        writeln!(out, "data type {what} (HL7 v{version})")?;
        return describe_components(defs, what, out);
    }
    if let Some(s) = defs.structure(what) {
        writeln!(out, "message structure {} (HL7 v{version})", s.id)?;
        return describe_structure(defs, &s.children, 0, out);
    }
    bail!(
        "HL7 v{version} defines no {what:?}: expected TYPE^EVENT (ADT^A04), a structure (ADT_A01), a segment \
         (PID), a field (PID-11) or a data type (XAD)"
    )
}

/// `, length 250, table 0001 Administrative Sex`.
fn push_facts(
    defs: &hl7v2::Definitions,
    line: &mut String,
    length: Option<u32>,
    table: Option<u16>,
) {
    if let Some(l) = length {
        line.push_str(&format!(", length {l}"));
    }
    if table.is_some() {
        line.push_str(&format!(", table {}", table_name(defs, table)));
    }
}

fn table_name(defs: &hl7v2::Definitions, table: Option<u16>) -> String {
    match table {
        None => String::new(),
        Some(t) => match defs.table(t) {
            Some(tab) => format!("{t:04} {}", tab.name),
            None => format!("{t:04}"),
        },
    }
}

fn describe_components(
    defs: &hl7v2::Definitions,
    data_type: &str,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let Some(dt) = defs
        .data_type(data_type)
        .filter(|d| !d.components.is_empty())
    else {
        return Ok(());
    };
    let tw = dt
        .components
        .iter()
        .map(|c| c.data_type.len())
        .max()
        .unwrap_or(0)
        .max(4);
    let width = dt
        .components
        .iter()
        .map(|c| c.name.chars().count())
        .max()
        .unwrap_or(0);
    writeln!(
        out,
        "{:>4}  {:width$}  {:tw$}  {:>6}  table",
        "#", "component", "type", "length"
    )?;
    for (i, c) in dt.components.iter().enumerate() {
        writeln!(
            out,
            "{:>4}  {:width$}  {:tw$}  {:>6}  {}",
            i + 1,
            c.name,
            c.data_type,
            c.length.map(|l| l.to_string()).unwrap_or_default(),
            table_name(defs, c.table),
        )?;
    }
    Ok(())
}

fn describe_structure(
    defs: &hl7v2::Definitions,
    nodes: &[hl7v2::StructureNode],
    depth: usize,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    for node in nodes {
        let indent = "  ".repeat(depth);
        let card = cardinality(node.min, node.max);
        match &node.kind {
            hl7v2::NodeKind::Segment { id, name } => {
                let label = defs
                    .segment(id)
                    .map(|s| &*s.name)
                    .unwrap_or("(not defined)");
                let shown = if name != id {
                    format!("{name} ({id})")
                } else {
                    name.to_string()
                };
                writeln!(out, "{:<34} {card:<8} {label}", format!("{indent}{shown}"))?;
            }
            hl7v2::NodeKind::Group {
                name,
                choice,
                children,
            } => {
                let what = if *choice {
                    "choice: exactly one of"
                } else {
                    "group"
                };
                writeln!(out, "{:<34} {card:<8} {what}", format!("{indent}{name}"))?;
                describe_structure(defs, children, depth + 1, out)?;
            }
        }
    }
    Ok(())
}

/// The files and the parsed paths of `thoth hl7 get`, in any order: an argument that names a file (or `-`) is a
/// file; any other must read as a path, else the error says it is neither.
#[allow(clippy::type_complexity)]
fn files_and_paths(args: &[String]) -> anyhow::Result<(Vec<PathBuf>, Vec<(String, hl7v2::Path)>)> {
    let (mut files, mut paths) = (Vec::new(), Vec::new());
    for arg in args {
        if arg == "-" || Path::new(arg).is_file() {
            files.push(PathBuf::from(arg));
            continue;
        }
        match hl7v2::Path::parse(arg) {
            Ok(path) => paths.push((arg.clone(), path)),
            Err(e) => bail!("{arg:?} is neither a file nor a path ({e})"),
        }
    }
    if files.is_empty() {
        bail!(
            "no file of messages among the arguments ({} read as paths); give a FILE (or - for stdin)",
            args.join(" ")
        );
    }
    if paths.is_empty() {
        bail!("no path to read among the arguments, e.g. PID-5-1 or MSH-10");
    }
    Ok((files, paths))
}

fn read_input(file: &Path) -> anyhow::Result<Vec<u8>> {
    if file.as_os_str() == "-" {
        let mut buf = Vec::new();
        std::io::stdin()
            .read_to_end(&mut buf)
            .context("reading stdin")?;
        return Ok(buf);
    }
    if !file.exists() {
        bail!("{}: no such file", file.display());
    }
    std::fs::read(file).with_context(|| format!("reading {}", file.display()))
}
