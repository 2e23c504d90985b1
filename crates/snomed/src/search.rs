//! Text search over descriptions with tantivy, in Hermes's manner: every typed token matches as a prefix,
//! shorter terms rank first, accents fold, optional fuzzy matching.
//!
//! Documents are the descriptions, added in order of term length (shortest first) into a single segment, so
//! document order *is* rank order: a search walks the intersection of its tokens' posting lists in document
//! order, applies the filters (active, is-a, refset, constraint bitmap) and stops after `max_hits` accepted
//! hits. Each token prefix of up to [`MAX_PREFIX`] characters is indexed as its own term (edge n-grams in the
//! `pre` field), so a prefix query is one posting list rather than an expansion over the term dictionary;
//! longer tokens and fuzzy queries use an automaton over whole tokens (`tok`).

use crate::error::{ImportError, OpenError, SearchError};
use crate::format::DescRec;
use crate::store::DescriptionIdx;
use std::path::Path;
use tantivy::query::{BooleanQuery, EnableScoring, FuzzyTermQuery, Query, TermQuery};
use tantivy::schema::{FAST, Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions};
use tantivy::tokenizer::{
    AsciiFoldingFilter, LowerCaser, RemoveLongFilter, SimpleTokenizer, TextAnalyzer, TokenStream,
};
use tantivy::{DocSet, Index, IndexReader, ReloadPolicy, TERMINATED, Term};

/// Token prefixes up to this many characters are indexed as terms of their own.
pub const MAX_PREFIX: usize = 12;

/// The most words a text search may have. Each word of a fuzzy search builds its own Levenshtein automaton
/// (hundreds of kilobytes for a ten-letter word), so the word count bounds the memory of one request; no real
/// search of clinical terms comes near it.
pub const MAX_SEARCH_WORDS: usize = 32;

/// The longest word a text search may have, in characters (longer SNOMED CT words than 60 letters do not exist).
pub const MAX_SEARCH_WORD_CHARS: usize = 64;

/// Refuses a search text beyond [`MAX_SEARCH_WORDS`] or [`MAX_SEARCH_WORD_CHARS`], before any work is done.
/// `words` are the search's words, however the caller split them.
pub fn check_search_words<S: AsRef<str>>(words: &[S]) -> Result<(), SearchError> {
    if words.len() > MAX_SEARCH_WORDS {
        return Err(SearchError::TooCostly(format!(
            "the search text has {} words, more than the limit of {MAX_SEARCH_WORDS}",
            words.len()
        )));
    }
    if let Some(w) = words
        .iter()
        .find(|w| w.as_ref().chars().count() > MAX_SEARCH_WORD_CHARS)
    {
        return Err(SearchError::TooCostly(format!(
            "the search text has a word of {} characters, more than the limit of {MAX_SEARCH_WORD_CHARS}",
            w.as_ref().chars().count()
        )));
    }
    Ok(())
}

const ANALYZER: &str = "sct";
const F_PRE: &str = "pre";
const F_TOK: &str = "tok";
const F_DESC: &str = "d";

/// The open search index of a store.
pub struct SearchIndex {
    reader: IndexReader,
    analyzer: TextAnalyzer,
    pre: Field,
    tok: Field,
}

/// One candidate hit handed to the filter: the description, in rank order.
pub(crate) type Candidate = DescriptionIdx;

fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(60))
        .filter(LowerCaser)
        .filter(AsciiFoldingFilter)
        .build()
}

fn schema() -> (Schema, Field, Field, Field) {
    let mut b = Schema::builder();
    let pre = b.add_text_field(
        F_PRE,
        TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer("whitespace")
                .set_index_option(IndexRecordOption::Basic),
        ),
    );
    let tok = b.add_text_field(
        F_TOK,
        TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(ANALYZER)
                .set_index_option(IndexRecordOption::Basic),
        ),
    );
    let d = b.add_u64_field(F_DESC, FAST);
    (b.build(), pre, tok, d)
}

/// Normalized tokens of `text`: split on non-alphanumerics, lower-cased, accents folded.
pub(crate) fn tokens(analyzer: &mut TextAnalyzer, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut stream = analyzer.token_stream(text);
    while stream.advance() {
        out.push(stream.token().text.clone());
    }
    out
}

fn edge_ngrams(tokens: &[String], out: &mut String) {
    out.clear();
    for t in tokens {
        let mut end_chars = 0;
        for (i, c) in t.char_indices() {
            end_chars += 1;
            if end_chars > MAX_PREFIX {
                break;
            }
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(&t[..i + c.len_utf8()]);
        }
    }
}

/// Builds the index in `dir` over every description, shortest term first.
pub(crate) fn build_index(dir: &Path, descs: &[DescRec], heap: &[u8]) -> Result<(), ImportError> {
    let err = |e: tantivy::TantivyError| ImportError::Index(e.to_string());
    std::fs::create_dir_all(dir).map_err(|e| ImportError::io(dir, e))?;
    let (schema, pre, tok, d) = schema();
    let tokenizers = tantivy::tokenizer::TokenizerManager::default();
    tokenizers.register(ANALYZER, analyzer());
    let term_of = |r: &DescRec| {
        std::str::from_utf8(&heap[r.term_off as usize..(r.term_off + r.term_len) as usize])
            .unwrap_or("")
    };
    let mut order: Vec<(u32, u32)> = descs
        .iter()
        .enumerate()
        .map(|(i, r)| (term_of(r).chars().count() as u32, i as u32))
        .collect();
    order.sort_unstable();
    // One segment, documents in insertion order: document order is rank order (see the module docs).
    let mut writer = Index::builder()
        .schema(schema)
        .tokenizers(tokenizers)
        .single_segment_index_writer(dir_mmap(dir)?, 1 << 30)
        .map_err(err)?;
    let mut a = analyzer();
    let mut grams = String::new();
    for (_, i) in order {
        let term = term_of(&descs[i as usize]);
        let toks = tokens(&mut a, term);
        edge_ngrams(&toks, &mut grams);
        let mut doc = tantivy::TantivyDocument::default();
        doc.add_text(pre, &grams);
        doc.add_text(tok, term);
        doc.add_u64(d, i as u64);
        writer.add_document(doc).map_err(err)?;
    }
    writer.finalize().map_err(err)?;
    Ok(())
}

fn dir_mmap(dir: &Path) -> Result<tantivy::directory::MmapDirectory, ImportError> {
    tantivy::directory::MmapDirectory::open(dir).map_err(|e| ImportError::Index(e.to_string()))
}

impl SearchIndex {
    pub(crate) fn open(dir: &Path) -> Result<SearchIndex, OpenError> {
        let err = |e: String| OpenError::Index {
            path: dir.to_path_buf(),
            message: e,
        };
        let index = Index::open_in_dir(dir).map_err(|e| err(e.to_string()))?;
        index.tokenizers().register(ANALYZER, analyzer());
        let schema = index.schema();
        let pre = schema.get_field(F_PRE).map_err(|e| err(e.to_string()))?;
        let tok = schema.get_field(F_TOK).map_err(|e| err(e.to_string()))?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(|e: tantivy::TantivyError| err(e.to_string()))?;
        Ok(SearchIndex {
            reader,
            analyzer: analyzer(),
            pre,
            tok,
        })
    }

    /// Normalized tokens of a query string.
    pub fn tokenize(&self, text: &str) -> Vec<String> {
        tokens(&mut self.analyzer.clone(), text)
    }

    /// Walks the descriptions matching every token of `tokens` (as prefixes, or within `fuzzy` edits), shortest
    /// first, calling `accept` on each until it has returned `true` `max_hits` times.
    pub(crate) fn walk(
        &self,
        tokens: &[String],
        fuzzy: u8,
        max_hits: usize,
        mut accept: impl FnMut(Candidate) -> bool,
    ) -> Result<usize, SearchError> {
        let err = |e: tantivy::TantivyError| SearchError::Index(e.to_string());
        if tokens.is_empty() || max_hits == 0 {
            return Ok(0);
        }
        let queries: Vec<Box<dyn Query>> = tokens
            .iter()
            .map(|t| -> Box<dyn Query> {
                if fuzzy == 0 && t.chars().count() <= MAX_PREFIX {
                    Box::new(TermQuery::new(
                        Term::from_field_text(self.pre, t),
                        IndexRecordOption::Basic,
                    ))
                } else {
                    Box::new(FuzzyTermQuery::new_prefix(
                        Term::from_field_text(self.tok, t),
                        fuzzy.min(2),
                        true,
                    ))
                }
            })
            .collect();
        let query: Box<dyn Query> = if queries.len() == 1 {
            queries.into_iter().next().unwrap_or_else(|| unreachable!())
        } else {
            Box::new(BooleanQuery::intersection(queries))
        };
        let searcher = self.reader.searcher();
        let weight = query
            .weight(EnableScoring::disabled_from_searcher(&searcher))
            .map_err(err)?;
        let mut accepted = 0usize;
        for segment in searcher.segment_readers() {
            let column = segment.fast_fields().u64(F_DESC).map_err(err)?;
            let alive = segment.alive_bitset();
            let mut scorer = weight.scorer(segment, 1.0).map_err(err)?;
            let mut doc = scorer.doc();
            while doc != TERMINATED {
                if alive.is_none_or(|a| a.is_alive(doc))
                    && let Some(d) = column.first(doc)
                    && accept(DescriptionIdx(d as u32))
                {
                    accepted += 1;
                    if accepted >= max_hits {
                        return Ok(accepted);
                    }
                }
                doc = scorer.advance();
            }
        }
        Ok(accepted)
    }

    /// Number of indexed descriptions.
    pub fn doc_count(&self) -> u64 {
        self.reader.searcher().num_docs()
    }
}
