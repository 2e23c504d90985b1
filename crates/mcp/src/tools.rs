//! The tools: their names, input schemas and answers.
//!
//! SNOMED CT tools carry Hermes's names and argument names (`concept_id`, `accept_language`, `max_hits`...), so
//! that prompts written for Hermes's MCP server work here; FHIR tools take the FHIR operations' parameter names;
//! HL7 v2 tools take the message text. A tool with an HTTP route is answered by that route (see `api`); the others
//! read the facades directly. Every list is paged: at most [`MAX_PAGE`] items per answer, with `total`,
//! `offset` and, when more remain, `next_offset` and a `note` saying how to get them.

use crate::api::{Api, Caller, ToolError};
use crate::args::{Args, query, segment};
use axum::http::Method;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// The most items one answer carries.
pub const MAX_PAGE: usize = 1000;
/// Items per answer when the caller does not say.
pub const DEFAULT_PAGE: usize = 100;
/// The most concept identifiers one call takes.
pub const MAX_IDS: usize = 100;
/// The most paths `paths_to_root` lists.
const MAX_PATHS: usize = 100;
/// The FHIR system of SNOMED CT.
const SNOMED_CT: &str = "http://snomed.info/sct";
/// Type id of a fully specified name.
const FSN: u64 = 900_000_000_000_003_001;

/// Which content a tool needs: listed only when the server has it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Needs {
    Snomed,
    Terminology,
    Nothing,
    Engine,
}

/// One tool as listed.
pub(crate) struct ToolDef {
    pub(crate) name: &'static str,
    pub(crate) description: &'static str,
    pub(crate) needs: Needs,
    pub(crate) schema: fn() -> Value,
}

fn concept_id() -> Value {
    json!({"oneOf": [{"type": "integer"}, {"type": "string"}, {"type": "array", "items": {"type": ["integer", "string"]}, "maxItems": MAX_IDS}],
           "description": "SNOMED CT concept identifier, or an array of them (the answer is then an array)"})
}

fn accept_language() -> Value {
    json!({"type": "string", "description": "Accept-Language value choosing the language reference set (e.g. 'en-GB', 'en-US'); the server's default when absent"})
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required})
}

fn paging() -> (Value, Value) {
    (
        json!({"type": "integer", "minimum": 0, "description": "Index of the first item to return (paging; default 0)"}),
        json!({"type": "integer", "minimum": 1, "maximum": MAX_PAGE, "description": format!("Items per answer (default {DEFAULT_PAGE}, at most {MAX_PAGE})")}),
    )
}

fn with_paging(mut schema: Value, count_name: &str) -> Value {
    let (offset, count) = paging();
    schema["properties"]["offset"] = offset;
    schema["properties"][count_name] = count;
    schema
}

fn concept_only() -> Value {
    object(json!({"concept_id": concept_id()}), &["concept_id"])
}

fn concept_lang() -> Value {
    object(
        json!({"concept_id": concept_id(), "accept_language": accept_language()}),
        &["concept_id"],
    )
}

fn message_schema(extra: Value, required: &[&str]) -> Value {
    let mut s = object(
        json!({"message": {"type": "string", "description": "One HL7 v2 message (segments separated by CR, LF or CRLF)"}}),
        required,
    );
    if let (Some(p), Some(e)) = (s["properties"].as_object_mut(), extra.as_object()) {
        p.extend(e.clone());
    }
    s
}

fn version() -> Value {
    json!({"type": "string", "description": "HL7 v2 version to read it as (2.1 to 2.8.2); MSH-12 when absent"})
}

/// Every tool, in the order they are listed.
pub(crate) static TOOLS: &[ToolDef] = &[
    // SNOMED CT: Hermes's tools.
    ToolDef {
        name: "search",
        description: "Search SNOMED CT descriptions for a clinical phrase and return matching concepts with their preferred terms. Falls back to fuzzy matching when nothing matches exactly.",
        needs: Needs::Snomed,
        schema: || {
            object(
                json!({
            "query": {"type": "string", "description": "Search text"},
            "constraint": {"type": "string", "description": "ECL expression the concepts must satisfy, e.g. '<<404684003'"},
            "max_hits": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE, "description": "Maximum results (default 10)"},
            "accept_language": accept_language()}),
                &["query"],
            )
        },
    },
    ToolDef {
        name: "autocomplete",
        description: "Type-ahead search of SNOMED CT: every token must match the start of a word of the description.",
        needs: Needs::Snomed,
        schema: || {
            object(
                json!({
            "query": {"type": "string", "description": "Search text"},
            "constraint": {"type": "string", "description": "ECL expression the concepts must satisfy"},
            "max_hits": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE, "description": "Maximum results (default 200)"},
            "fuzzy": {"type": "integer", "minimum": 0, "maximum": 2, "description": "Fuzziness 0-2 (default 0)"},
            "fallback_fuzzy": {"type": "integer", "minimum": 0, "maximum": 2, "description": "Fuzziness used when nothing matches exactly"},
            "accept_language": accept_language()}),
                &["query"],
            )
        },
    },
    ToolDef {
        name: "concept",
        description: "A SNOMED CT concept: id, effectiveTime, active, moduleId, definitionStatusId.",
        needs: Needs::Snomed,
        schema: concept_only,
    },
    ToolDef {
        name: "extended_concept",
        description: "A SNOMED CT concept with its descriptions, parent relationships (direct and transitive), concrete values, reference sets and preferred description.",
        needs: Needs::Snomed,
        schema: concept_lang,
    },
    ToolDef {
        name: "properties",
        description: "The defining attributes of a SNOMED CT concept, by relationship group then attribute type.",
        needs: Needs::Snomed,
        schema: concept_only,
    },
    ToolDef {
        name: "descriptions",
        description: "Every description of a SNOMED CT concept: fully specified names, synonyms and definitions in every language.",
        needs: Needs::Snomed,
        schema: concept_only,
    },
    ToolDef {
        name: "synonym",
        description: "The preferred synonym (preferred term) of SNOMED CT concept(s) in the language asked for.",
        needs: Needs::Snomed,
        schema: concept_lang,
    },
    ToolDef {
        name: "fully_specified_name",
        description: "The fully specified name of SNOMED CT concept(s), with its semantic tag, e.g. '(disorder)'.",
        needs: Needs::Snomed,
        schema: concept_only,
    },
    ToolDef {
        name: "subsumed_by",
        description: "Whether concept(s) are a kind of (subsumed by) another concept(s); with arrays, true when any pair is.",
        needs: Needs::Snomed,
        schema: || {
            object(
                json!({"concept_id": concept_id(), "subsumer_id": concept_id()}),
                &["concept_id", "subsumer_id"],
            )
        },
    },
    ToolDef {
        name: "paths_to_root",
        description: "Every IS-A path from a SNOMED CT concept up to the root, with preferred terms.",
        needs: Needs::Snomed,
        schema: concept_lang,
    },
    ToolDef {
        name: "expand_ecl",
        description: "Expand a SNOMED CT ECL expression: one row per synonym of each matching active concept (id, conceptId, term, preferredTerm). Paged.",
        needs: Needs::Snomed,
        schema: || {
            with_paging(
                object(
                    json!({
            "ecl": {"type": "string", "description": "ECL expression, e.g. '<<73211009 |Diabetes mellitus|'"},
            "include_historic": {"type": "boolean", "description": "Add inactive concepts that historical associations point from to the results (default false)"},
            "accept_language": accept_language()}),
                    &["ecl"],
                ),
                "max_hits",
            )
        },
    },
    ToolDef {
        name: "valid_ecl",
        description: "Whether an ECL expression is syntactically valid, without evaluating it; the parse error when not.",
        needs: Needs::Nothing,
        schema: || {
            object(
                json!({"ecl": {"type": "string", "description": "ECL expression"}}),
                &["ecl"],
            )
        },
    },
    ToolDef {
        name: "intersect_ecl",
        description: "The given concept identifiers that satisfy an ECL expression.",
        needs: Needs::Snomed,
        schema: || {
            object(
                json!({"concept_id": concept_id(), "ecl": {"type": "string", "description": "ECL expression"}}),
                &["concept_id", "ecl"],
            )
        },
    },
    ToolDef {
        name: "transitive_synonyms",
        description: "Every synonym of a concept and all its descendants (or of the concepts an ECL expression selects). Paged.",
        needs: Needs::Snomed,
        schema: || {
            with_paging(
                object(
                    json!({"concept_id": {"type": ["integer", "string"], "description": "SNOMED CT concept identifier"},
            "ecl": {"type": "string", "description": "ECL expression selecting the concepts (instead of concept_id)"}}),
                    &[],
                ),
                "max_hits",
            )
        },
    },
    ToolDef {
        name: "historical",
        description: "Historical associations of a concept (SAME AS, REPLACED BY, POSSIBLY EQUIVALENT TO...): members of each association refset whose source is the concept, by refset.",
        needs: Needs::Snomed,
        schema: concept_only,
    },
    ToolDef {
        name: "membership",
        description: "The active reference set members whose referenced component is the concept (which refsets it belongs to, with the members' fields).",
        needs: Needs::Snomed,
        schema: concept_only,
    },
    ToolDef {
        name: "map_to",
        description: "Map a SNOMED CT concept through a map reference set (e.g. 447562003 for ICD-10); when it has no map, the maps of its most specific mapped ancestors.",
        needs: Needs::Snomed,
        schema: || {
            object(
                json!({"concept_id": concept_id(), "refset_id": {"type": ["integer", "string"], "description": "Map reference set identifier"}}),
                &["concept_id", "refset_id"],
            )
        },
    },
    ToolDef {
        name: "map_from",
        description: "Reverse map: the members of a map reference set whose target is the code (e.g. an ICD-10 code back to SNOMED CT).",
        needs: Needs::Snomed,
        schema: || {
            object(
                json!({"refset_id": {"type": ["integer", "string"], "description": "Map reference set identifier"},
            "code": {"type": "string", "description": "Code in the target code system"}}),
                &["refset_id", "code"],
            )
        },
    },
    ToolDef {
        name: "map_into",
        description: "Classify concepts into a target set: for each concept, the most specific concepts of the set that are the concept itself or its ancestors (e.g. to group detailed diagnoses under the headings of a report). The target is an ECL expression or a reference set identifier.",
        needs: Needs::Snomed,
        schema: || {
            object(
                json!({"concept_id": concept_id(),
            "target": {"type": ["string", "integer"], "description": "ECL expression, or the identifier of a reference set, defining the target set"}}),
                &["concept_id", "target"],
            )
        },
    },
    ToolDef {
        name: "source_historical",
        description: "The reverse of `historical`: the (inactive) concepts whose historical associations point to this concept, by association type.",
        needs: Needs::Snomed,
        schema: || {
            object(
                json!({"concept_id": concept_id(), "accept_language": accept_language()}),
                &["concept_id"],
            )
        },
    },
    ToolDef {
        name: "with_historical",
        description: "The concepts together with the concepts historical associations link them to, in both directions (what replaced them and what they replaced): for finding records coded with concepts since inactivated.",
        needs: Needs::Snomed,
        schema: || object(json!({"concept_id": concept_id()}), &["concept_id"]),
    },
    ToolDef {
        name: "validate_expression",
        description: "Check a SNOMED CT post-coordinated expression (compositional grammar, e.g. `71388002:405813007=15497006`): its syntax, that every concept exists and every attribute name is an attribute; answers the expression written with each concept's preferred term. The FHIR CodeSystem $validate-code of the expression.",
        needs: Needs::Snomed,
        schema: || {
            object(
                json!({"expression": {"type": "string", "description": "The expression"}, "accept_language": accept_language()}),
                &["expression"],
            )
        },
    },
    ToolDef {
        name: "subsumes_expression",
        description: "How two SNOMED CT codes or post-coordinated expressions relate (equivalent, subsumes, subsumed-by, not-subsumed), compared through their normal forms. The FHIR CodeSystem $subsumes of SNOMED CT.",
        needs: Needs::Snomed,
        schema: || {
            object(
                json!({"expression_a": {"type": "string", "description": "A concept id or an expression"},
            "expression_b": {"type": "string", "description": "A concept id or an expression"}}),
                &["expression_a", "expression_b"],
            )
        },
    },
    ToolDef {
        name: "refset_members",
        description: "The concepts that are active members of a reference set. Paged.",
        needs: Needs::Snomed,
        schema: || {
            with_paging(
                object(
                    json!({"refset_id": {"type": ["integer", "string"], "description": "Reference set identifier"}}),
                    &["refset_id"],
                ),
                "max_hits",
            )
        },
    },
    ToolDef {
        name: "refsets",
        description: "The installed reference sets with their names and the kind of refset they are (their parent).",
        needs: Needs::Snomed,
        schema: || object(json!({}), &[]),
    },
    ToolDef {
        name: "server_info",
        description: "What this server has loaded: the SNOMED CT releases and counts, language reference sets, and every FHIR code system it can answer for.",
        needs: Needs::Nothing,
        schema: || object(json!({}), &[]),
    },
    // FHIR terminology operations over every loaded code system.
    ToolDef {
        name: "lookup",
        description: "FHIR CodeSystem $lookup over any loaded code system (SNOMED CT, LOINC, ICD-10-CM, HL7 and FHIR code systems): display, designations and properties of a code.",
        needs: Needs::Terminology,
        schema: || {
            object(
                json!({
            "system": {"type": "string", "description": "Code system URL, e.g. http://snomed.info/sct, http://loinc.org, http://hl7.org/fhir/sid/icd-10-cm"},
            "code": {"type": "string"},
            "version": {"type": "string"},
            "display_language": {"type": "string"},
            "property": {"type": "array", "items": {"type": "string"}, "description": "Properties to return"}}),
                &["system", "code"],
            )
        },
    },
    ToolDef {
        name: "validate_code",
        description: "FHIR $validate-code: whether a code (and display) is valid in a value set (value_set given) or in a code system. Answers result, display and messages.",
        needs: Needs::Terminology,
        schema: || {
            object(
                json!({
            "system": {"type": "string", "description": "Code system URL"},
            "code": {"type": "string"},
            "display": {"type": "string", "description": "Display to check too"},
            "version": {"type": "string", "description": "Code system version"},
            "value_set": {"type": "string", "description": "Value set URL (canonical); the code system alone when absent"}}),
                &["system", "code"],
            )
        },
    },
    ToolDef {
        name: "expand",
        description: "FHIR ValueSet $expand: the codes of a value set, optionally filtered by text. Paged with offset and count.",
        needs: Needs::Terminology,
        schema: || {
            with_paging(
                object(
                    json!({
            "value_set": {"type": "string", "description": "Value set URL, e.g. http://snomed.info/sct?fhir_vs=ecl/<<73211009 or http://loinc.org/vs"},
            "filter": {"type": "string", "description": "Text the displays must match"},
            "display_language": {"type": "string"}}),
                    &["value_set"],
                ),
                "count",
            )
        },
    },
    ToolDef {
        name: "subsumes",
        description: "FHIR CodeSystem $subsumes: the relation of code_a to code_b (equivalent, subsumes, subsumed-by, not-subsumed).",
        needs: Needs::Terminology,
        schema: || {
            object(
                json!({"system": {"type": "string"}, "code_a": {"type": "string"}, "code_b": {"type": "string"}, "version": {"type": "string"}}),
                &["system", "code_a", "code_b"],
            )
        },
    },
    ToolDef {
        name: "translate",
        description: "FHIR ConceptMap $translate: codes a code maps to in another system, by a concept map (url) or by target system.",
        needs: Needs::Terminology,
        schema: || {
            object(
                json!({
            "system": {"type": "string"}, "code": {"type": "string"},
            "url": {"type": "string", "description": "ConceptMap URL"},
            "target_system": {"type": "string", "description": "Target code system URL"}}),
                &["system", "code"],
            )
        },
    },
    // HL7 v2.
    ToolDef {
        name: "hl7_parse",
        description: "Parse an HL7 v2 message into its segments and fields, each with its name from the message structure and version (what PID-5 is called), with any parse diagnostics.",
        needs: Needs::Nothing,
        schema: || message_schema(json!({"version": version()}), &["message"]),
    },
    ToolDef {
        name: "hl7_validate",
        description: "Validate an HL7 v2 message against its message structure, segments, data types and tables; lists every issue with its path and HL7 error code.",
        needs: Needs::Nothing,
        schema: || {
            message_schema(
                json!({"version": version(), "strict": {"type": "boolean", "description": "Strict profile: lengths and tables as errors (default false)"}}),
                &["message"],
            )
        },
    },
    ToolDef {
        name: "hl7_to_fhir",
        description: "Convert an HL7 v2 message to a FHIR R4 Bundle by the HL7 v2-to-FHIR guide, its codes checked by this server's terminology.",
        needs: Needs::Nothing,
        schema: || {
            message_schema(
                json!({"bundle": {"type": "string", "enum": ["message", "transaction", "collection"], "description": "Bundle type (default message)"}, "time_zone": {"type": "string", "description": "IANA time zone (e.g. America/Chicago) of times sent without a UTC offset; default: the server's [to_fhir] time_zone, else such times keep only their date"}}),
                &["message"],
            )
        },
    },
    ToolDef {
        name: "hl7_explain",
        description: "Explain an HL7 v2 field path such as PID-8 or PID-11-3: its name, data type, table with codes, repetition, and its value in a message when one is given.",
        needs: Needs::Nothing,
        schema: || {
            message_schema(
                json!({"path": {"type": "string", "description": "Field path: SEG-field[-component[-subcomponent]], e.g. PID-8"}, "version": version()}),
                &["path"],
            )
        },
    },
    ToolDef {
        name: "find_messages",
        description: "Find messages received by the interface engine (newest first): by type, trigger, sender, control id, status or time. Needs the messages:read scope.",
        needs: Needs::Engine,
        schema: || {
            with_paging(
                object(
                    json!({
            "type": {"type": "string", "description": "MSH-9.1, e.g. ADT"},
            "trigger": {"type": "string", "description": "MSH-9.2, e.g. A01"},
            "sender": {"type": "string"},
            "control_id": {"type": "string", "description": "MSH-10"},
            "status": {"type": "string"},
            "since": {"type": "string", "description": "ISO date/time or epoch milliseconds"},
            "until": {"type": "string"}}),
                    &[],
                ),
                "limit",
            )
        },
    },
    ToolDef {
        name: "get_message",
        description: "One received message by id: its header facts, text, named JSON view, delivery history and validation. Needs the messages:read scope.",
        needs: Needs::Engine,
        schema: || {
            object(
                json!({"id": {"type": ["integer", "string"], "description": "Message id from find_messages"}}),
                &["id"],
            )
        },
    },
];

/// What the tools read: the server's state (for the facades) and its HTTP application (for the routes).
#[derive(Clone)]
pub(crate) struct Ctx {
    pub(crate) state: server::AppState,
    pub(crate) api: Api,
}

/// The answer of tool `name` to `args`; `Ok(None)` when there is no such tool.
pub(crate) async fn call(
    ctx: &Ctx,
    caller: &Caller,
    name: &str,
    args: &Map<String, Value>,
) -> Option<Result<Answer, ToolError>> {
    let def = TOOLS.iter().find(|t| t.name == name)?;
    if let Err(e) = available(&ctx.state, def.needs) {
        return Some(Err(e));
    }
    let a = Args(args);
    Some(match route_request(name, &a) {
        Some(Ok(r)) => ctx
            .api
            .text(
                caller,
                r.method,
                &r.uri,
                r.body,
                r.accept_language.as_deref(),
            )
            .await
            .map(Answer::Json),
        Some(Err(e)) => Err(e),
        None => run(ctx, caller, name, &a).await.map(Answer::Value),
    })
}

/// A tool's answer.
pub(crate) enum Answer {
    /// Built by the tool (or read from a route and reshaped): sent as structured content and its JSON text.
    Value(Value),
    /// A route's resource unchanged, as the route wrote it (JSON, or ndjson for several Bundles): sent as text
    /// without being read into a value and written again, so the tool answers byte for byte what HTTP answers
    /// and a FHIR `$lookup` costs no more than the route itself (three JSON passes over its Parameters were most
    /// of a stdio call's time).
    Json(String),
}

/// The HTTP request of a tool whose answer is that route's resource unchanged.
struct RouteRequest {
    method: Method,
    uri: String,
    body: Vec<u8>,
    accept_language: Option<String>,
}

/// The route request of tool `name`, when its answer is the route's resource unchanged; `None` for the others.
fn route_request(name: &str, a: &Args<'_>) -> Option<Result<RouteRequest, ToolError>> {
    let get = |uri: String, accept_language: Option<String>| RouteRequest {
        method: Method::GET,
        uri,
        body: Vec::new(),
        accept_language,
    };
    let post = |uri: String, message: String| RouteRequest {
        method: Method::POST,
        uri,
        body: crate::hl7::message_bytes(&message),
        accept_language: None,
    };
    let request = || -> Result<Option<RouteRequest>, ToolError> {
        let lang = a.opt_string("accept_language")?;
        Ok(Some(match name {
            "lookup" => {
                let mut pairs = vec![
                    ("system", Some(a.string("system")?)),
                    ("code", Some(a.string("code")?)),
                    ("version", a.opt_string("version")?),
                    ("displayLanguage", a.opt_string("display_language")?),
                ];
                let props = a.strings("property")?;
                pairs.extend(props.into_iter().map(|p| ("property", Some(p))));
                get(format!("/fhir/CodeSystem/$lookup?{}", query(&pairs)), lang)
            }
            "validate_code" => {
                let (route, system_param, version_param) = match a.opt_string("value_set")? {
                    Some(_) => ("ValueSet", "system", "systemVersion"),
                    None => ("CodeSystem", "url", "version"),
                };
                let q = query(&[
                    ("url", a.opt_string("value_set")?),
                    (system_param, Some(a.string("system")?)),
                    ("code", Some(a.string("code")?)),
                    ("display", a.opt_string("display")?),
                    (version_param, a.opt_string("version")?),
                ]);
                get(format!("/fhir/{route}/$validate-code?{q}"), lang)
            }
            "subsumes" => {
                let q = query(&[
                    ("system", Some(a.string("system")?)),
                    ("codeA", Some(a.string("code_a")?)),
                    ("codeB", Some(a.string("code_b")?)),
                    ("version", a.opt_string("version")?),
                ]);
                get(format!("/fhir/CodeSystem/$subsumes?{q}"), None)
            }
            "translate" => {
                let q = query(&[
                    ("url", a.opt_string("url")?),
                    ("system", Some(a.string("system")?)),
                    ("code", Some(a.string("code")?)),
                    ("targetsystem", a.opt_string("target_system")?),
                ]);
                get(format!("/fhir/ConceptMap/$translate?{q}"), None)
            }
            "hl7_validate" => {
                let q = query(&[
                    ("version", a.opt_string("version")?),
                    ("strict", a.opt_bool("strict")?.map(|b| b.to_string())),
                ]);
                post(format!("/hl7/validate?{q}"), a.string("message")?)
            }
            "hl7_to_fhir" => {
                let q = query(&[
                    ("bundle", a.opt_string("bundle")?),
                    ("time_zone", a.opt_string("time_zone")?),
                ]);
                post(format!("/hl7/to-fhir?{q}"), a.string("message")?)
            }
            _ => return Ok(None),
        }))
    };
    request().transpose()
}

/// Whether the content a tool needs is loaded, with what to do when it is not.
pub(crate) fn available(state: &server::AppState, needs: Needs) -> Result<(), ToolError> {
    match needs {
        Needs::Snomed if state.snomed.is_none() => Err(ToolError::new(
            "no SNOMED CT release is loaded in this server; import one with `thoth import snomed PATH` and restart",
        )),
        Needs::Terminology if state.terminology.is_none() => Err(ToolError::new(
            "terminology content is not loaded in this server",
        )),
        Needs::Engine if state.engine.is_none() => Err(ToolError::new(
            "the interface engine is not running in this process: received messages are only available over the HTTP transport of `thoth serve` (POST /mcp)",
        )),
        _ => Ok(()),
    }
}

async fn run(ctx: &Ctx, caller: &Caller, name: &str, a: &Args<'_>) -> Result<Value, ToolError> {
    let api = &ctx.api;
    let lang = a.opt_string("accept_language")?;
    let lang = lang.as_deref();
    let concept_get = |suffix: &'static str| {
        move |id: &str| format!("/v1/snomed/concepts/{}{suffix}", segment(id))
    };
    match name {
        "search" | "autocomplete" => {
            let search = name == "search";
            let max = a
                .opt_u64("max_hits")?
                .unwrap_or(if search { 10 } else { 200 });
            let fuzzy = |n: Option<u64>| n.filter(|&n| n > 0).map(|_| "true".to_string());
            let (fuzzy_now, fallback) = if search {
                (None, Some("true".to_string()))
            } else {
                (
                    fuzzy(a.opt_u64("fuzzy")?),
                    fuzzy(a.opt_u64("fallback_fuzzy")?),
                )
            };
            let q = query(&[
                ("s", Some(a.string("query")?)),
                ("maxHits", Some(max.clamp(1, MAX_PAGE as u64).to_string())),
                ("constraint", a.opt_string("constraint")?),
                ("fuzzy", fuzzy_now),
                ("fallbackFuzzy", fallback),
            ]);
            let hits = api
                .get(caller, &format!("/v1/snomed/search?{q}"), lang)
                .await?;
            Ok(page(hits, 0, MAX_PAGE, "max_hits"))
        }
        "concept" => per_concept(api, caller, a, lang, concept_get("")).await,
        "extended_concept" => per_concept(api, caller, a, lang, concept_get("/extended")).await,
        "properties" => per_concept(api, caller, a, lang, concept_get("/properties")).await,
        "descriptions" => per_concept(api, caller, a, lang, concept_get("/descriptions")).await,
        "synonym" => per_concept(api, caller, a, lang, concept_get("/preferred")).await,
        "historical" => per_concept(api, caller, a, lang, concept_get("/historical")).await,
        "membership" => per_concept(api, caller, a, lang, concept_get("/refsets")).await,
        "fully_specified_name" => {
            let (ids, many) = a.ids("concept_id")?;
            let mut out = Vec::new();
            for id in &ids {
                let all = api
                    .get(caller, &concept_get("/descriptions")(id), lang)
                    .await?;
                let fsn = all
                    .as_array()
                    .and_then(|d| {
                        d.iter()
                            .find(|d| d["active"] == true && d["typeId"] == FSN)
                            .cloned()
                    })
                    .ok_or_else(|| {
                        ToolError::new(format!("concept {id} has no active fully specified name"))
                    })?;
                out.push(fsn);
            }
            Ok(one_or_many(out, many))
        }
        "subsumed_by" => {
            let (concepts, _) = a.ids("concept_id")?;
            let (subsumers, _) = a.ids("subsumer_id")?;
            for c in &concepts {
                for s in &subsumers {
                    let uri = format!(
                        "/v1/snomed/concepts/{}/subsumed-by/{}",
                        segment(c),
                        segment(s)
                    );
                    if api.get(caller, &uri, None).await?["subsumedBy"] == true {
                        return Ok(json!({"subsumedBy": true}));
                    }
                }
            }
            Ok(json!({"subsumedBy": false}))
        }
        "map_to" => {
            let refset = a.string("refset_id")?;
            let (ids, many) = a.ids("concept_id")?;
            let mut out = Vec::new();
            for id in &ids {
                let uri = format!(
                    "/v1/snomed/concepts/{}/map/{}",
                    segment(id),
                    segment(&refset)
                );
                out.push(page(
                    api.get(caller, &uri, None).await?,
                    0,
                    MAX_PAGE,
                    "refset_id",
                ));
            }
            Ok(one_or_many(out, many))
        }
        "map_from" => {
            let uri = format!(
                "/v1/snomed/crossmap/{}/{}",
                segment(&a.string("refset_id")?),
                segment(&a.string("code")?)
            );
            Ok(page(
                api.get(caller, &uri, None).await?,
                0,
                MAX_PAGE,
                "code",
            ))
        }
        "expand_ecl" => {
            let (offset, count) = paging_args(a, "max_hits")?;
            let q = query(&[
                ("ecl", Some(a.string("ecl")?)),
                (
                    "includeHistoric",
                    a.opt_bool("include_historic")?.map(|b| b.to_string()),
                ),
            ]);
            let rows = api
                .get(caller, &format!("/v1/snomed/expand?{q}"), lang)
                .await?;
            Ok(page(rows, offset, count, "max_hits"))
        }
        "transitive_synonyms" => {
            let (offset, count) = paging_args(a, "max_hits")?;
            let ecl = match (a.opt_string("ecl")?, a.opt_string("concept_id")?) {
                (Some(ecl), _) => ecl,
                (None, Some(id)) => format!("<< {id}"),
                (None, None) => return Err(ToolError::new("give either `concept_id` or `ecl`")),
            };
            let rows = api
                .get(
                    caller,
                    &format!("/v1/snomed/expand?{}", query(&[("ecl", Some(ecl))])),
                    None,
                )
                .await?;
            let mut terms: Vec<&str> = rows
                .as_array()
                .map(|r| r.iter().filter_map(|r| r["term"].as_str()).collect())
                .unwrap_or_default();
            terms.sort_unstable();
            terms.dedup();
            Ok(page(json!(terms), offset, count, "max_hits"))
        }
        "valid_ecl" => Ok(match ecl::parse(&a.string("ecl")?) {
            Ok(_) => json!({"valid": true}),
            Err(e) => json!({"valid": false, "error": e.to_string()}),
        }),

        "validate_expression" => {
            let q = query(&[
                ("url", Some(SNOMED_CT.to_string())),
                ("code", Some(a.string("expression")?)),
            ]);
            let answer = api
                .get(
                    caller,
                    &format!("/fhir/CodeSystem/$validate-code?{q}"),
                    lang,
                )
                .await?;
            Ok(json!({
                "valid": parameter(&answer, "result").and_then(|p| p["valueBoolean"].as_bool()).unwrap_or(false),
                "display": parameter(&answer, "display").and_then(|p| p["valueString"].as_str()),
                "message": parameter(&answer, "message").and_then(|p| p["valueString"].as_str()),
            }))
        }
        "subsumes_expression" => {
            let q = query(&[
                ("system", Some(SNOMED_CT.to_string())),
                ("codeA", Some(a.string("expression_a")?)),
                ("codeB", Some(a.string("expression_b")?)),
            ]);
            let answer = api
                .get(caller, &format!("/fhir/CodeSystem/$subsumes?{q}"), None)
                .await?;
            Ok(
                json!({"outcome": parameter(&answer, "outcome").and_then(|p| p["valueCode"].as_str())}),
            )
        }
        "intersect_ecl" | "map_into" | "source_historical" | "with_historical"
        | "paths_to_root" | "refset_members" | "refsets" => {
            // These read the store directly, ECL and closures included, which may take long: off the thread
            // that serves the connection (an HTTP thread for `POST /mcp`), bounded with the server's other
            // expensive work.
            let store = store(ctx)?.clone();
            let (name, args, lang) = (name.to_string(), a.0.clone(), lang.map(str::to_string));
            server::offload_work(move || read_store(&store, &name, &Args(&args), lang.as_deref()))
                .await
                .map_err(ToolError)?
        }
        "server_info" => server_info(ctx, caller).await,
        "expand" => {
            let (offset, count) = paging_args(a, "count")?;
            let q = query(&[
                ("url", Some(a.string("value_set")?)),
                ("filter", a.opt_string("filter")?),
                ("displayLanguage", a.opt_string("display_language")?),
                ("offset", Some(offset.to_string())),
                ("count", Some(count.to_string())),
            ]);
            let mut vs = api
                .get(caller, &format!("/fhir/ValueSet/$expand?{q}"), lang)
                .await?;
            let returned = vs["expansion"]["contains"].as_array().map_or(0, Vec::len);
            if let Some(total) = vs["expansion"]["total"].as_u64()
                && (offset + returned) < total as usize
            {
                let next = offset + returned;
                vs["note"] = json!(format!(
                    "{returned} of {total} codes from offset {offset}; call again with offset={next} for more"
                ));
                vs["next_offset"] = json!(next);
            }
            Ok(vs)
        }
        "hl7_parse" => crate::hl7::parse(a),
        "hl7_explain" => crate::hl7::explain(a),
        "find_messages" => {
            let (offset, limit) = paging_args(a, "limit")?;
            let mut pairs = Vec::new();
            for key in [
                "type",
                "trigger",
                "sender",
                "control_id",
                "status",
                "since",
                "until",
            ] {
                pairs.push((key, a.opt_string(key)?));
            }
            pairs.push(("offset", Some(offset.to_string())));
            pairs.push(("limit", Some(limit.to_string())));
            let mut found = api
                .get(caller, &format!("/messages?{}", query(&pairs)), None)
                .await?;
            let returned = found["items"].as_array().map_or(0, Vec::len);
            if let Some(total) = found["total"].as_u64()
                && offset + returned < total as usize
            {
                found["next_offset"] = json!(offset + returned);
                found["note"] = json!(format!(
                    "{returned} of {total} messages; call again with offset={} for more",
                    offset + returned
                ));
            }
            Ok(found)
        }
        "get_message" => {
            let id = a.string("id")?;
            api.get(caller, &format!("/messages/{}", segment(&id)), None)
                .await
        }
        _ => Err(ToolError::new(format!("tool {name} has no handler"))),
    }
}

/// `offset` and the page size named `count_name` (default [`DEFAULT_PAGE`], at most [`MAX_PAGE`]).
fn paging_args(a: &Args<'_>, count_name: &str) -> Result<(usize, usize), ToolError> {
    let offset = a.opt_u64("offset")?.unwrap_or(0) as usize;
    let count = a.opt_u64(count_name)?.unwrap_or(DEFAULT_PAGE as u64) as usize;
    if count == 0 || count > MAX_PAGE {
        return Err(ToolError::new(format!(
            "`{count_name}` must be between 1 and {MAX_PAGE}; page through larger results with `offset`"
        )));
    }
    Ok((offset, count))
}

/// A list as a page: `{"items", "total", "offset"}`, and when items remain, `next_offset` and a note.
/// Anything but an array is returned as it is.
pub(crate) fn page(list: Value, offset: usize, count: usize, count_name: &str) -> Value {
    let Value::Array(items) = list else {
        return list;
    };
    let total = items.len();
    let items: Vec<Value> = items.into_iter().skip(offset).take(count).collect();
    let mut out = json!({"items": items, "total": total, "offset": offset});
    let end = offset + out["items"].as_array().map_or(0, Vec::len);
    if end < total {
        out["next_offset"] = json!(end);
        out["note"] = json!(format!(
            "{} of {total} items shown; call again with offset={end} (and {count_name} up to {MAX_PAGE}) for more",
            end - offset.min(end)
        ));
    }
    out
}

fn one_or_many(mut out: Vec<Value>, many: bool) -> Value {
    if many {
        json!({"results": out})
    } else {
        out.pop().unwrap_or(Value::Null)
    }
}

/// `GET path(id)` for each concept of `concept_id`: one answer, or `{"results": [...]}` for an array of ids.
/// Lists become pages (`items`).
async fn per_concept(
    api: &Api,
    caller: &Caller,
    a: &Args<'_>,
    lang: Option<&str>,
    path: impl Fn(&str) -> String,
) -> Result<Value, ToolError> {
    let (ids, many) = a.ids("concept_id")?;
    let mut out = Vec::with_capacity(ids.len());
    for id in &ids {
        let v = api.get(caller, &path(id), lang).await?;
        out.push(page(v, 0, MAX_PAGE, "concept_id"));
    }
    Ok(one_or_many(out, many))
}

fn store(ctx: &Ctx) -> Result<&Arc<snomed::Store>, ToolError> {
    ctx.state
        .snomed
        .as_ref()
        .ok_or_else(|| ToolError::new("no SNOMED CT release is loaded"))
}

fn concept_idx(store: &snomed::Store, id: &str) -> Result<snomed::ConceptIdx, ToolError> {
    let sct = snomed::SctId::parse(id).map_err(|e| ToolError::new(format!("{id}: {e}")))?;
    store.index_of(sct).ok_or_else(|| {
        ToolError::new(format!(
            "concept {id} not found (not in this release; use `search` to find the concept for a term)"
        ))
    })
}

/// The tools that read the SNOMED CT store directly (run on the blocking pool, see `run`).
fn read_store(
    store: &snomed::Store,
    name: &str,
    a: &Args<'_>,
    lang: Option<&str>,
) -> Result<Value, ToolError> {
    match name {
        "intersect_ecl" => intersect_ecl(store, a),
        "map_into" => map_into(store, a),
        "source_historical" => source_historical(store, a, lang),
        "with_historical" => with_historical(store, a),
        "paths_to_root" => paths_to_root(store, a, lang),
        "refset_members" => refset_members(store, a),
        "refsets" => refsets(store),
        other => Err(ToolError::new(format!("{other} does not read the store"))),
    }
}

/// Evaluated as `GET /v1/snomed/expand` and `search?constraint=` evaluate ECL (Hermes's attribute counting).
fn intersect_ecl(store: &snomed::Store, a: &Args<'_>) -> Result<Value, ToolError> {
    let (ids, _) = a.ids("concept_id")?;
    let set = ecl_set(store, &a.string("ecl")?)?;
    let mut out = Vec::new();
    for id in &ids {
        let idx = concept_idx(store, id)?;
        if set.contains(idx.0) {
            out.push(json!(store.id_of(idx).get()));
        }
    }
    Ok(json!({"items": out}))
}

/// The set an ECL expression selects, evaluated as [`intersect_ecl`] evaluates it.
fn ecl_set(store: &snomed::Store, ecl: &str) -> Result<roaring::RoaringBitmap, ToolError> {
    use snomed::ecl_eval::{AttributeCounting, Options, evaluate_str_with};
    let options = Options {
        counting: AttributeCounting::Distinct,
        ..Options::default()
    };
    evaluate_str_with(store, ecl, &options)
        .map_err(|e| ToolError::new(format!("the ECL expression cannot be evaluated: {e}")))
}

/// Hermes's `map-into`: for each concept, the members of the target set among the concept and its ancestors that
/// no other such member lies below (the most specific headings).
fn map_into(store: &snomed::Store, a: &Args<'_>) -> Result<Value, ToolError> {
    let (ids, _) = a.ids("concept_id")?;
    let target = match a.0.get("target") {
        Some(Value::Number(n)) => n.to_string(),
        _ => a.string("target")?,
    };
    // A bare identifier names a reference set (as in Hermes); anything else is ECL.
    let ecl = match target.trim().parse::<u64>() {
        Ok(refset) => format!("^ {refset}"),
        Err(_) => target,
    };
    let set = ecl_set(store, &ecl)?;
    let mut out = Vec::new();
    for id in &ids {
        let idx = concept_idx(store, id)?;
        let mut found: Vec<snomed::ConceptIdx> = std::iter::once(idx)
            .chain(store.ancestors(idx).iter().copied())
            .filter(|c| set.contains(c.0))
            .collect();
        let above: roaring::RoaringBitmap = found
            .iter()
            .flat_map(|&c| store.ancestors(c).iter().map(|p| p.0))
            .collect();
        found.retain(|c| !above.contains(c.0));
        found.sort_unstable_by_key(|&c| store.id_of(c).get());
        found.dedup();
        let mapped: Vec<Value> = found.iter().map(|&c| json!(store.id_of(c).get())).collect();
        out.push(json!({"conceptId": store.id_of(idx).get(), "mappedTo": mapped}));
    }
    Ok(json!({"items": out}))
}

/// Which historical associations point to each concept: the sources (`ECL {{ +HISTORY }}` finds them), each with
/// the associations that link it to the concept.
fn source_historical(
    store: &snomed::Store,
    a: &Args<'_>,
    lang: Option<&str>,
) -> Result<Value, ToolError> {
    let refsets = store.language_refsets_for(lang);
    let term = |id: snomed::SctId| {
        store
            .index_of(id)
            .and_then(|i| store.preferred_term(i, &refsets))
            .map(str::to_string)
    };
    let (ids, many) = a.ids("concept_id")?;
    let mut out = Vec::new();
    for id in &ids {
        let idx = concept_idx(store, id)?;
        let target = store.id_of(idx);
        let sources = ecl_set(store, &format!("{target} {{{{ +HISTORY }}}}"))?;
        let mut by_type: std::collections::BTreeMap<u64, Vec<Value>> = Default::default();
        for s in sources.iter().filter(|&s| s != idx.0) {
            let source = store.id_of(snomed::ConceptIdx(s));
            for m in store.historical_associations(source) {
                if association_target(&m) == Some(target.get()) {
                    by_type.entry(m.refset.get()).or_default().push(json!({
                        "conceptId": source.get(),
                        "term": term(source),
                        "active": store.concept(snomed::ConceptIdx(s)).active,
                    }));
                }
            }
        }
        let groups: Vec<Value> = by_type
            .into_iter()
            .map(|(refset, sources)| {
                json!({"associationType": refset, "associationName": snomed::SctId::new(refset).ok().and_then(term), "sources": sources})
            })
            .collect();
        out.push(json!({"conceptId": target.get(), "associations": groups}));
    }
    Ok(one_or_many(out, many))
}

/// The parameter `name` of a FHIR Parameters answer.
fn parameter<'v>(parameters: &'v Value, name: &str) -> Option<&'v Value> {
    parameters["parameter"]
        .as_array()?
        .iter()
        .find(|p| p["name"] == name)
}

/// The concept a historical association member points to: its one additional field, `targetComponentId`.
fn association_target(m: &snomed::RefsetMember<'_>) -> Option<u64> {
    m.field(0)?.parse().ok()
}

/// The concepts, the concepts their historical associations point to, and those whose associations point to
/// them.
fn with_historical(store: &snomed::Store, a: &Args<'_>) -> Result<Value, ToolError> {
    let (ids, _) = a.ids("concept_id")?;
    let mut all = roaring::RoaringBitmap::new();
    for id in &ids {
        let idx = concept_idx(store, id)?;
        all.insert(idx.0);
        for m in store.historical_associations(store.id_of(idx)) {
            let target = association_target(&m)
                .and_then(|t| snomed::SctId::new(t).ok())
                .and_then(|t| store.index_of(t));
            all.extend(target.map(|t| t.0));
        }
    }
    let listed: Vec<String> = all
        .iter()
        .map(|i| store.id_of(snomed::ConceptIdx(i)).to_string())
        .collect();
    let with_sources = ecl_set(
        store,
        &format!("({}) {{{{ +HISTORY }}}}", listed.join(" OR ")),
    )?;
    all |= with_sources;
    let mut out: Vec<u64> = all
        .iter()
        .map(|i| store.id_of(snomed::ConceptIdx(i)).get())
        .collect();
    out.sort_unstable();
    Ok(json!({"items": out}))
}

fn paths_to_root(
    store: &snomed::Store,
    a: &Args<'_>,
    lang: Option<&str>,
) -> Result<Value, ToolError> {
    let refsets = store.language_refsets_for(lang);
    let (ids, many) = a.ids("concept_id")?;
    let mut out = Vec::new();
    for id in &ids {
        let idx = concept_idx(store, id)?;
        let mut paths: Vec<Vec<snomed::ConceptIdx>> = Vec::new();
        let mut truncated = false;
        // Depth-first from the concept: a path ends at a concept without parents (the root).
        let mut stack = vec![vec![idx]];
        while let Some(path) = stack.pop() {
            let last = *path.last().unwrap_or(&idx);
            let parents = store.parents(last);
            if parents.is_empty() {
                if paths.len() == MAX_PATHS {
                    truncated = true;
                    break;
                }
                paths.push(path);
                continue;
            }
            for &p in parents.iter().rev() {
                if !path.contains(&p) {
                    let mut next = path.clone();
                    next.push(p);
                    stack.push(next);
                }
            }
        }
        let rendered: Vec<Value> = paths
            .iter()
            .map(|p| {
                Value::Array(
                    p.iter()
                        .map(|&c| json!({"id": store.id_of(c).get(), "term": store.preferred_term(c, &refsets)}))
                        .collect(),
                )
            })
            .collect();
        let mut v = json!({"paths": rendered});
        if truncated {
            v["note"] = json!(format!("only the first {MAX_PATHS} paths are shown"));
        }
        out.push(v);
    }
    Ok(one_or_many(out, many))
}

fn refset_members(store: &snomed::Store, a: &Args<'_>) -> Result<Value, ToolError> {
    let (offset, count) = paging_args(a, "max_hits")?;
    let refset = a.string("refset_id")?;
    let refset =
        snomed::SctId::parse(&refset).map_err(|e| ToolError::new(format!("{refset}: {e}")))?;
    if store.refset_fields(refset).is_none() && store.refset_concepts(refset).is_empty() {
        return Err(ToolError::new(format!(
            "refset {refset} is not installed; the `refsets` tool lists those that are"
        )));
    }
    let members: Vec<Value> = store
        .refset_concepts(refset)
        .iter()
        .map(|i| json!(store.id_of(snomed::ConceptIdx(i)).get()))
        .collect();
    Ok(page(Value::Array(members), offset, count, "max_hits"))
}

fn refsets(store: &snomed::Store) -> Result<Value, ToolError> {
    let langs = store.default_refsets();
    let items: Vec<Value> = store
        .refsets()
        .map(|id| {
            let idx = store.index_of(id);
            let term = idx.and_then(|i| store.preferred_term(i, &langs));
            let kind = idx.and_then(|i| store.parents(i).first().copied()).map(
                |p| json!({"id": store.id_of(p).get(), "name": store.preferred_term(p, &langs)}),
            );
            json!({"id": id.get(), "name": term, "type": kind})
        })
        .collect();
    Ok(json!({"items": items, "total": items.len()}))
}

async fn server_info(ctx: &Ctx, caller: &Caller) -> Result<Value, ToolError> {
    let mut out = Map::new();
    out.insert(
        "software".into(),
        json!(format!("Thoth {}", ctx.state.info.version)),
    );
    if let Some(store) = &ctx.state.snomed {
        let m = store.manifest();
        let langs: Vec<Value> = store
            .language_refsets()
            .into_iter()
            .map(|(id, tag)| json!({"id": id.get(), "language": tag}))
            .collect();
        out.insert(
            "snomed".into(),
            json!({"releases": m.releases, "concepts": m.concepts, "activeConcepts": m.active_concepts,
                   "descriptions": m.descriptions, "languageRefsets": langs}),
        );
    }
    if ctx.state.terminology.is_some() {
        out.insert("codeSystems".into(), code_systems(&ctx.api, caller).await?);
    }
    out.insert("messages".into(), json!(ctx.state.engine.is_some()));
    Ok(Value::Object(out))
}

/// The loaded code systems as the FHIR search lists them: url, version, name, title.
pub(crate) async fn code_systems(api: &Api, caller: &Caller) -> Result<Value, ToolError> {
    let bundle = api
        .get(
            caller,
            "/fhir/CodeSystem?_elements=url,version,name,title&_count=10000",
            None,
        )
        .await?;
    let list: Vec<Value> = bundle["entry"]
        .as_array()
        .map(|e| {
            e.iter()
                .map(|e| {
                    let r = &e["resource"];
                    json!({"url": r["url"], "version": r["version"], "title": r["title"].as_str().or(r["name"].as_str())})
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(Value::Array(list))
}
