//! FHIR search of the registry's resources written as JSON text: [`Terminology::search`]'s Bundle, byte for
//! byte, without copying the resources into a `serde_json::Value` first.
//!
//! A search by canonical URL reads the registry's index of that URL rather than every resource, and a page
//! of the catalogue (`_count=10&_summary=true`) walks the resources up to the page and counts the rest. The
//! HTTP fast lane answers GET searches from here; `tests/it/search.rs` compares the text with `search`.

use crate::fast::{json_number, json_string};
use crate::registry::Kind;
use crate::service::{DEFAULT_SEARCH_COUNT, MAX_SEARCH_COUNT, Terminology, count_clamped_entry};
use bytes::Bytes;
use serde_json::Value;
use std::sync::Arc;

/// Resources whose text is at least this long are kept written (smaller ones cost less to write than to look up).
/// Writing a resource from its value costs about a microsecond per kilobyte; the packages' value sets are 2 kB in
/// the median and 10 kB on average, so most are kept.
const WHOLE_TEXT_KEPT_FROM: usize = 1024;

/// `o` as JSON text, its members that `keep` keeps, in order.
fn write_object(
    buf: &mut Vec<u8>,
    o: &serde_json::Map<String, Value>,
    keep: &dyn Fn(&str) -> bool,
) {
    buf.push(b'{');
    let mut first = true;
    for (k, v) in o.iter().filter(|(k, _)| keep(k)) {
        if !first {
            buf.push(b',');
        }
        first = false;
        json_string(buf, k);
        buf.push(b':');
        // Writing into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *buf, v);
    }
    buf.push(b'}');
}

impl Terminology {
    /// [`Terminology::search`]'s answer as JSON text.
    pub fn search_text<K: AsRef<str>, V: AsRef<str>>(
        &self,
        kind: Kind,
        query: &[(K, V)],
        base: &str,
    ) -> Vec<u8> {
        self.search_chunks(kind, query, base).concat()
    }

    /// [`Terminology::search_text`] in pieces to be sent one after the other: the text of a large resource
    /// returned whole is the kept text itself, shared rather than copied (a copy of a 2.3 MB value set, in a
    /// buffer the allocator had to fault in afresh, took a millisecond or more per request).
    pub fn search_chunks<K: AsRef<str>, V: AsRef<str>>(
        &self,
        kind: Kind,
        query: &[(K, V)],
        base: &str,
    ) -> Vec<Bytes> {
        let get = |k: &str| {
            query
                .iter()
                .find(|(n, _)| n.as_ref() == k)
                .map(|(_, v)| v.as_ref())
        };
        let asked: usize = get("_count")
            .and_then(|c| c.parse().ok())
            .unwrap_or(DEFAULT_SEARCH_COUNT);
        let count = asked.min(MAX_SEARCH_COUNT);
        let offset: usize = get("_offset").and_then(|c| c.parse().ok()).unwrap_or(0);
        let summary = get("_summary");
        let elements: Option<Vec<&str>> = get("_elements").map(|e| e.split(',').collect());
        let matches = |r: &Value| crate::service::search_matches(r, query);
        let registry = self.registry();
        // The resources of `kind` with that URL, in load order: the registry keeps each URL's versions in the
        // order they were loaded, as it keeps all resources.
        let by_url: Option<Vec<&Arc<Value>>> = get("url").map(|url| match kind {
            Kind::CodeSystem => registry
                .code_system_versions(url)
                .iter()
                .map(|cs| &cs.resource)
                .collect(),
            Kind::ValueSet => registry.value_set_versions(url).iter().collect(),
            Kind::ConceptMap => registry.concept_map_versions(url).iter().collect(),
        });
        // Without a parameter that selects (a page of the catalogue), every resource of the kind matches: the
        // total is the registry's count, and only the resources up to the page are walked.
        let selects = query.iter().any(|(k, _)| {
            matches!(
                k.as_ref(),
                "url" | "version" | "_id" | "status" | "name" | "title" | "system"
            )
        });
        let listing = summary != Some("count");
        let (total, page): (usize, Vec<&Arc<Value>>) = if !selects {
            let page = match listing {
                true => registry.resources(kind).skip(offset).take(count).collect(),
                false => Vec::new(),
            };
            (registry.count(kind), page)
        } else {
            let candidates: Box<dyn Iterator<Item = &Arc<Value>>> = match by_url {
                Some(list) => Box::new(list.into_iter()),
                None => Box::new(registry.resources(kind)),
            };
            let mut total = 0usize;
            let mut page = Vec::new();
            for r in candidates.filter(|r| matches(r)) {
                if listing && total >= offset && page.len() < count {
                    page.push(r);
                }
                total += 1;
            }
            (total, page)
        };
        let keep = |k: &str| {
            !(summary == Some("true")
                && matches!(k, "concept" | "compose" | "expansion" | "group" | "text"))
                && elements
                    .as_ref()
                    .is_none_or(|el| matches!(k, "resourceType" | "id" | "meta") || el.contains(&k))
        };
        let mut chunks: Vec<Bytes> = Vec::new();
        let mut buf: Vec<u8> = Vec::with_capacity(256 + 1024 * page.len());
        buf.extend_from_slice(br#"{"resourceType":"Bundle","type":"searchset","total":"#);
        json_number(&mut buf, total as u64);
        let outcome = (asked > count && listing).then(|| count_clamped_entry(asked));
        if !page.is_empty() || outcome.is_some() {
            buf.extend_from_slice(br#","entry":["#);
            for (n, r) in page.iter().enumerate() {
                if n > 0 {
                    buf.push(b',');
                }
                let object = r.as_object();
                // The id of the resource as kept (an `_elements` list always keeps it).
                let id = object
                    .and_then(|o| o.get("id"))
                    .filter(|_| keep("id"))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                buf.extend_from_slice(br#"{"fullUrl":"#);
                json_string(&mut buf, &format!("{base}/{}/{id}", kind.name()));
                buf.extend_from_slice(br#","resource":"#);
                let whole = summary != Some("true") && elements.is_none();
                match object {
                    // A resource returned whole: its text once, then from the cache (writing a 2 MB value set
                    // again for every request held the HTTP thread for milliseconds).
                    Some(o) if whole => {
                        let key = format!("{:p}", Arc::as_ptr(r));
                        let text = match self.resource_texts.get(&key) {
                            Some(kept) if Arc::ptr_eq(&kept.0, r) => Some(kept.1.clone()),
                            _ => {
                                let mut text = Vec::new();
                                write_object(&mut text, o, &keep);
                                if text.len() >= WHOLE_TEXT_KEPT_FROM {
                                    let text = Bytes::from(text);
                                    let bytes = text.len();
                                    self.resource_texts.put(
                                        key,
                                        Arc::new(((*r).clone(), text.clone())),
                                        bytes,
                                    );
                                    Some(text)
                                } else {
                                    buf.extend_from_slice(&text);
                                    None
                                }
                            }
                        };
                        if let Some(text) = text {
                            chunks.push(Bytes::from(std::mem::take(&mut buf)));
                            chunks.push(text);
                        }
                    }
                    Some(o) => write_object(&mut buf, o, &keep),
                    None => {
                        let _ = serde_json::to_writer(&mut buf, &***r);
                    }
                }
                buf.extend_from_slice(br#","search":{"mode":"match"}}"#);
            }
            if let Some(o) = outcome {
                if !page.is_empty() {
                    buf.push(b',');
                }
                let _ = serde_json::to_writer(&mut buf, &o);
            }
            buf.push(b']');
        }
        buf.push(b'}');
        chunks.push(Bytes::from(buf));
        chunks
    }
}
