//! `thoth fhir`: convert FHIR R4 resources between JSON, XML, the binary encoding and NDJSON; compare sizes;
//! print the `.proto` schema of the binary encoding.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use fhir::{Format, NdjsonReader, NdjsonWriter, ReadOptions, Resource};

use crate::data_dir::GlobalArgs;

/// Options of `thoth fhir`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand, Debug)]
enum Command {
    /// Convert a resource (or an NDJSON stream) to another format; the input format is detected.
    Convert {
        /// Input file, `-` for stdin.
        input: PathBuf,
        /// Output file (default: stdout).
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Target format.
        #[arg(long, value_enum)]
        to: Target,
        /// Input format, when detection is not wanted (`.ndjson` files are read as NDJSON).
        #[arg(long, value_enum)]
        from: Option<Target>,
        /// Pretty-print JSON or XML.
        #[arg(long)]
        pretty: bool,
        /// Keep unknown JSON properties instead of rejecting them (they can only be written as JSON).
        #[arg(long)]
        lenient: bool,
        /// What to do with primitive values their FHIR type does not allow (`"birthDate": "notadate"`): refuse
        /// the input, warn on stderr and convert, or convert without looking.
        #[arg(long, value_enum, default_value_t = Values::Refuse)]
        invalid_values: Values,
    },
    /// Print the size of a resource in each encoding, plain and gzipped.
    Sizes {
        /// Input file (any format), `-` for stdin.
        file: PathBuf,
    },
    /// Print the Protocol Buffers schema of the binary encoding.
    ProtoSchema,
}

/// `--invalid-values`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Values {
    Refuse,
    Warn,
    Keep,
}

/// Applies `--invalid-values` to one resource read from `source`.
fn check_values(r: &Resource, values: Values, source: &str) -> anyhow::Result<()> {
    if values == Values::Keep {
        return Ok(());
    }
    let issues = r.invalid_primitives();
    if issues.is_empty() {
        return Ok(());
    }
    let listed: Vec<String> = issues.iter().take(20).map(|i| format!("  {i}")).collect();
    let more = issues.len().saturating_sub(listed.len());
    let more = if more > 0 {
        format!("\n  ... and {more} more")
    } else {
        String::new()
    };
    if values == Values::Refuse {
        bail!(
            "{source}: {} invalid value(s) (--invalid-values warn converts anyway):\n{}{more}",
            issues.len(),
            listed.join("\n")
        );
    }
    eprintln!(
        "{source}: warning: {} invalid value(s):\n{}{more}",
        issues.len(),
        listed.join("\n")
    );
    Ok(())
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    Json,
    Xml,
    Pb,
    /// One compact JSON resource per line (a Bundle's entries, or an NDJSON input re-encoded).
    Ndjson,
}

pub fn run(_global: &GlobalArgs, args: Args) -> anyhow::Result<()> {
    match args.command {
        Command::Convert {
            input,
            output,
            to,
            from,
            pretty,
            lenient,
            invalid_values,
        } => {
            let opts = if lenient {
                ReadOptions::lenient()
            } else {
                ReadOptions::default()
            };
            let mut out = open_output(output.as_deref())?;
            let ndjson_in = from == Some(Target::Ndjson)
                || (from.is_none() && input.extension().is_some_and(|e| e == "ndjson"));
            if ndjson_in {
                return convert_ndjson(&input, to, opts, invalid_values, &mut out);
            }
            let bytes = read_input(&input)?;
            let r = parse(&bytes, from, &opts)
                .with_context(|| format!("reading {}", input.display()))?;
            check_values(&r, invalid_values, &input.display().to_string())?;
            match to {
                Target::Ndjson => {
                    let mut w = NdjsonWriter::new(&mut out);
                    let entries = r.bundle_entries();
                    if entries.is_empty() {
                        w.write(&r)?;
                    }
                    for e in &entries {
                        w.write(e)?;
                    }
                    w.finish()?;
                }
                _ => {
                    let mut bytes = r.to_format(format_of(to), pretty)?;
                    if to != Target::Pb && !bytes.ends_with(b"\n") {
                        bytes.push(b'\n');
                    }
                    out.write_all(&bytes)?;
                }
            }
            out.flush()?;
            Ok(())
        }
        Command::Sizes { file } => {
            let bytes = read_input(&file)?;
            let r = parse(&bytes, None, &ReadOptions::default())
                .with_context(|| format!("reading {}", file.display()))?;
            let compact = r.to_json();
            let rows = [
                ("JSON (pretty)", r.to_json_pretty()),
                ("JSON (compact)", compact.clone()),
                ("XML", r.to_xml(false)?),
                ("binary (protobuf)", r.to_protobuf()?),
            ];
            println!(
                "{:<18} {:>12} {:>8} {:>12} {:>8}",
                "encoding", "bytes", "x JSON", "gzip bytes", "x JSON"
            );
            let gz_compact = gzip_len(&compact)?;
            for (name, b) in rows {
                let gz = gzip_len(&b)?;
                println!(
                    "{name:<18} {:>12} {:>8.2} {:>12} {:>8.2}",
                    b.len(),
                    b.len() as f64 / compact.len() as f64,
                    gz,
                    gz as f64 / gz_compact as f64
                );
            }
            Ok(())
        }
        Command::ProtoSchema => {
            std::io::stdout().write_all(fhir::PROTO_SCHEMA.as_bytes())?;
            Ok(())
        }
    }
}

fn format_of(t: Target) -> Format {
    match t {
        Target::Json | Target::Ndjson => Format::Json,
        Target::Xml => Format::Xml,
        Target::Pb => Format::Protobuf,
    }
}

fn parse(bytes: &[u8], from: Option<Target>, opts: &ReadOptions) -> Result<Resource, fhir::Error> {
    match from.map(format_of) {
        None => Resource::from_bytes(bytes, opts),
        Some(Format::Xml) => Resource::from_xml_with(bytes, opts),
        Some(Format::Protobuf) => Resource::from_protobuf_with(bytes, opts),
        Some(_) => Resource::from_json_with(bytes, opts),
    }
}

/// Streams NDJSON line by line: to NDJSON/JSON (one compact resource per line) only.
fn convert_ndjson(
    input: &Path,
    to: Target,
    opts: ReadOptions,
    values: Values,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    if !matches!(to, Target::Ndjson | Target::Json) {
        bail!(
            "NDJSON input converts to NDJSON (--to ndjson or json); XML and binary hold one resource per file"
        );
    }
    let reader: Box<dyn BufRead> = if input == Path::new("-") {
        Box::new(BufReader::new(std::io::stdin().lock()))
    } else {
        Box::new(BufReader::new(
            std::fs::File::open(input).with_context(|| format!("opening {}", input.display()))?,
        ))
    };
    let mut w = NdjsonWriter::new(out);
    for (line, r) in NdjsonReader::new(reader, opts).enumerate() {
        let r = r.with_context(|| format!("reading {}", input.display()))?;
        check_values(
            &r,
            values,
            &format!("{} line {}", input.display(), line + 1),
        )?;
        w.write(&r)?;
    }
    w.finish()?.flush()?;
    Ok(())
}

fn read_input(path: &Path) -> anyhow::Result<Vec<u8>> {
    let mut buf = Vec::new();
    if path == Path::new("-") {
        std::io::stdin().read_to_end(&mut buf)?;
    } else {
        buf = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    }
    Ok(buf)
}

fn open_output(path: Option<&Path>) -> anyhow::Result<Box<dyn Write>> {
    Ok(match path {
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
        Some(p) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(p).with_context(|| format!("creating {}", p.display()))?,
        )),
    })
}

fn gzip_len(b: &[u8]) -> anyhow::Result<usize> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(b)?;
    Ok(e.finish()?.len())
}
