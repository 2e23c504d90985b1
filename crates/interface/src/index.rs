//! Secondary indexes of the message store and the query plans that use them.
//!
//! Each index maps (key, message id) to nothing, so that a range over one key lists its messages in id order and
//! reversed gives newest first. Type, sender, control ID and time never change after the insert; the status
//! index moves an entry when a delivery changes the message's status. [`list`] answers from the most selective
//! index the query names and reads a message's header only when another filter must be checked or the message is
//! on the page asked for, so that `total` over 100,000 messages costs a range count, not 100,000 decodes.

use crate::error::EngineError;
use crate::record::{Page, Query};
use crate::store::{META, MetaRecord, decode_meta, matches, summary};
use redb::{
    ReadTransaction, ReadableTable, ReadableTableMetadata, TableDefinition, WriteTransaction,
};

/// (MSH-9-1, id).
const BY_TYPE: TableDefinition<(&str, u64), ()> = TableDefinition::new("by_type");
/// (sending application, the part of the sender before `@`, id).
const BY_SENDER: TableDefinition<(&str, u64), ()> = TableDefinition::new("by_sender");
/// (MSH-9-2, the trigger event, id). Added after the others: [`backfill`] builds it for a store written before.
pub(crate) const BY_TRIGGER: TableDefinition<(&str, u64), ()> = TableDefinition::new("by_trigger");
/// (MSH-10, id).
const BY_CONTROL_ID: TableDefinition<(&str, u64), ()> = TableDefinition::new("by_control_id");
/// (status, id).
const BY_STATUS: TableDefinition<(&str, u64), ()> = TableDefinition::new("by_status");
/// (received ms, id).
const BY_TIME: TableDefinition<(u64, u64), ()> = TableDefinition::new("by_time");

fn w(e: impl Into<redb::Error>) -> EngineError {
    EngineError::store("write", e.into())
}

fn r(e: impl Into<redb::Error>) -> EngineError {
    EngineError::store("read", e.into())
}

fn sender_app(sender: &str) -> &str {
    sender.split('@').next().unwrap_or(sender)
}

/// Creates the index tables (in the transaction that creates the store's tables).
pub(crate) fn create(txn: &WriteTransaction) -> Result<(), redb::TableError> {
    txn.open_table(BY_TYPE)?;
    txn.open_table(BY_TRIGGER)?;
    txn.open_table(BY_SENDER)?;
    txn.open_table(BY_CONTROL_ID)?;
    txn.open_table(BY_STATUS)?;
    txn.open_table(BY_TIME)?;
    Ok(())
}

/// Indexes a new message.
pub(crate) fn add(txn: &WriteTransaction, id: u64, m: &MetaRecord) -> Result<(), EngineError> {
    let keyed = [
        (BY_TYPE, m.message_type.as_str()),
        (BY_TRIGGER, m.trigger.as_str()),
        (BY_SENDER, sender_app(&m.sender)),
        (BY_CONTROL_ID, m.control_id.as_str()),
        (BY_STATUS, m.status.as_str()),
    ];
    for (table, key) in keyed {
        txn.open_table(table)
            .map_err(w)?
            .insert((key, id), ())
            .map_err(w)?;
    }
    txn.open_table(BY_TIME)
        .map_err(w)?
        .insert((m.received_ms, id), ())
        .map_err(w)?;
    Ok(())
}

/// Moves a message from one status to another in the status index.
pub(crate) fn restatus(
    txn: &WriteTransaction,
    id: u64,
    old: &str,
    new: &str,
) -> Result<(), EngineError> {
    if old == new {
        return Ok(());
    }
    let mut table = txn.open_table(BY_STATUS).map_err(w)?;
    table.remove((old, id)).map_err(w)?;
    table.insert((new, id), ()).map_err(w)?;
    Ok(())
}

/// Builds every index from the header table (a store written before the indexes existed).
pub(crate) fn rebuild(txn: &WriteTransaction) -> Result<u64, EngineError> {
    let meta = txn.open_table(META).map_err(w)?;
    let mut n = 0;
    for entry in meta.iter().map_err(w)? {
        let (k, v) = entry.map_err(w)?;
        add(txn, k.value(), &decode_meta(v.value())?)?;
        n += 1;
    }
    Ok(n)
}

/// Builds the indexes added since a store was written (the trigger index) from the header table; the number of
/// messages indexed (0 when nothing was missing).
pub(crate) fn backfill(txn: &WriteTransaction) -> Result<u64, EngineError> {
    let mut by_trigger = txn.open_table(BY_TRIGGER).map_err(w)?;
    if !by_trigger.is_empty().map_err(w)? {
        return Ok(0);
    }
    let meta = txn.open_table(META).map_err(w)?;
    let mut n = 0;
    for entry in meta.iter().map_err(w)? {
        let (k, v) = entry.map_err(w)?;
        let m = decode_meta(v.value())?;
        by_trigger
            .insert((m.trigger.as_str(), k.value()), ())
            .map_err(w)?;
        n += 1;
    }
    Ok(n)
}

/// Messages matching `q`, newest first, with the total.
pub(crate) fn list(txn: &ReadTransaction, q: &Query) -> Result<Page, EngineError> {
    let meta = txn.open_table(META).map_err(r)?;
    let mut page = Page {
        total: 0,
        items: Vec::new(),
    };
    // Takes one candidate id: counts it when it matches, reads it when it is on the page.
    let mut visit = |id: u64, known_match: bool| -> Result<(), EngineError> {
        let on_page = page.total >= q.offset && page.items.len() < q.limit;
        if known_match && !on_page {
            page.total += 1;
            return Ok(());
        }
        let Some(v) = meta.get(id).map_err(r)? else {
            return Ok(());
        };
        let m = decode_meta(v.value())?;
        if known_match || matches(q, &m) {
            if on_page {
                page.items.push(summary(id, &m));
            }
            page.total += 1;
        }
        Ok(())
    };
    let others = |n: usize| filters(q) == n;
    let keyed = if let Some(c) = &q.control_id {
        Some((BY_CONTROL_ID, c.as_str(), others(1)))
    } else if let Some(t) = &q.trigger {
        Some((BY_TRIGGER, t.as_str(), others(1)))
    } else if let Some(s) = q.status {
        Some((BY_STATUS, s.as_str(), others(1)))
    } else if let Some(t) = &q.message_type {
        Some((BY_TYPE, t.as_str(), others(1)))
    } else {
        q.sender
            .as_deref()
            .map(|s| (BY_SENDER, sender_app(s), others(1) && !s.contains('@')))
    };
    if let Some((table, key, exact)) = keyed {
        let table = txn.open_table(table).map_err(r)?;
        for entry in table.range((key, 0)..=(key, u64::MAX)).map_err(r)?.rev() {
            visit(entry.map_err(r)?.0.value().1, exact)?;
        }
    } else if q.since_ms.is_some() || q.until_ms.is_some() {
        let table = txn.open_table(BY_TIME).map_err(r)?;
        let from = (q.since_ms.unwrap_or(0), 0);
        let to = (q.until_ms.unwrap_or(u64::MAX), 0);
        for entry in table.range(from..to).map_err(r)?.rev() {
            visit(entry.map_err(r)?.0.value().1, others(1))?;
        }
    } else {
        // No filter: the header table itself, and its length is the total.
        let total = meta.len().map_err(r)? as usize;
        for entry in meta.iter().map_err(r)?.rev().skip(q.offset).take(q.limit) {
            let (k, v) = entry.map_err(r)?;
            page.items
                .push(summary(k.value(), &decode_meta(v.value())?));
        }
        page.total = total;
    }
    Ok(page)
}

/// How many filters the query sets (time counts once).
fn filters(q: &Query) -> usize {
    [
        q.message_type.is_some(),
        q.trigger.is_some(),
        q.sender.is_some(),
        q.control_id.is_some(),
        q.since_ms.is_some() || q.until_ms.is_some(),
        q.status.is_some(),
    ]
    .iter()
    .filter(|&&b| b)
    .count()
}
