//! The message log: append-only, preallocated segment files that hold every message's exact bytes and every
//! store operation, written before the redb tables and synced (`fdatasync`) once per group commit. It is the
//! durable point of the store: a message is acknowledged once its record is synced here, and the redb tables are
//! brought up to date from it after a crash ([`Log::open`]).
//!
//! Why a log in front of redb: a durable redb commit rewrites the B-tree pages it touches (measured: 26 KB written
//! per 8.5 KB message) and its cost grows with the batch; an append of the batch to a preallocated file followed by
//! one `fdatasync` writes each byte once and touches no file-system metadata.
//!
//! Layout (little-endian). A segment `NNNNNNNNNN.seg` starts with a 16-byte header (`THOTHLOG`, format version
//! u32, zero u32) and is preallocated with zeros ([`prepare`]) so that a sync flushes data only. Segment sizes
//! double from 1 MiB up to the configured maximum, so that a small store stays small. Records follow:
//!
//! ```text
//! 0..4   magic "TLRC"
//! 4..8   CRC-32 (IEEE) of bytes 8..end
//! 8..12  payload length
//! 12..20 batch number (one per group commit, increasing)
//! 20..   payload: kind byte, then kind-specific bytes (crate::store encodes them)
//! ```
//!
//! A batch never spans segments: when it does not fit, a seal record (payload: kind 0) closes the segment and the
//! batch goes to the next one, which [`prepare`] made ahead of time.

use crate::error::EngineError;
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::thread::JoinHandle;

/// Bump when the layout of a segment or record changes incompatibly.
pub(crate) const LOG_VERSION: u32 = 1;
const SEGMENT_MAGIC: &[u8; 8] = b"THOTHLOG";
/// Where a segment's first record starts.
pub(crate) const SEGMENT_HEADER: u64 = 16;
const RECORD_MAGIC: &[u8; 4] = b"TLRC";
pub(crate) const RECORD_HEADER: usize = 20;
/// The payload kind of a seal record: the log continues in the next segment.
const SEAL: u8 = 0;
const SEAL_LEN: u64 = RECORD_HEADER as u64 + 1;
/// Zeros written per call while preallocating.
const FILL_CHUNK: usize = 1 << 20;
/// The size of the first segment; each next one doubles, up to the configured maximum.
const FIRST_SEGMENT: u64 = 1 << 20;

/// The preallocated size of segment `id`.
fn segment_size(id: u64, max: u64) -> u64 {
    (FIRST_SEGMENT << id.saturating_sub(1).min(20)).min(max)
}

/// A position in the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pos {
    pub segment: u64,
    pub offset: u64,
}

/// Where a record is: enough to read it back with one `pread`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Loc {
    pub segment: u64,
    pub offset: u64,
    /// The record's length, header included.
    pub len: u64,
}

fn segment_name(id: u64) -> String {
    format!("{id:010}.seg")
}

/// Reads records by location; shared by the writer and every reader thread.
pub(crate) struct LogReader {
    dir: PathBuf,
    files: RwLock<HashMap<u64, Arc<File>>>,
}

impl LogReader {
    fn file(&self, segment: u64) -> io::Result<Arc<File>> {
        if let Some(f) = self.files.read().expect("log files lock").get(&segment) {
            return Ok(f.clone());
        }
        let f = Arc::new(File::open(self.dir.join(segment_name(segment)))?);
        self.files
            .write()
            .expect("log files lock")
            .insert(segment, f.clone());
        Ok(f)
    }

    /// The payload of the record at `loc`, checked against its CRC.
    pub(crate) fn read(&self, loc: Loc) -> Result<Vec<u8>, EngineError> {
        let fail = |detail: String| EngineError::Store {
            op: "reading the message log",
            detail: format!(
                "segment {} offset {}: {detail}",
                segment_name(loc.segment),
                loc.offset
            ),
        };
        let file = self.file(loc.segment).map_err(|e| fail(e.to_string()))?;
        let mut buf = vec![0; loc.len as usize];
        file.read_exact_at(&mut buf, loc.offset)
            .map_err(|e| fail(e.to_string()))?;
        match decode(&buf) {
            Some((_, payload)) if RECORD_HEADER + payload.len() == buf.len() => {
                buf.drain(..RECORD_HEADER);
                Ok(buf)
            }
            _ => Err(fail("record damaged (bad magic, length or CRC)".into())),
        }
    }
}

/// The writer's side of the log.
pub(crate) struct Log {
    dir: PathBuf,
    max_segment_bytes: u64,
    segment: u64,
    file: Arc<File>,
    /// The current segment's length: records end at most [`SEAL_LEN`] before it.
    capacity: u64,
    /// Where the next record goes.
    end: u64,
    /// The last batch number written.
    batch: u64,
    /// The next segment, being preallocated (started once the current one is half full).
    next: Next,
    reader: Arc<LogReader>,
    buf: Vec<u8>,
    /// Bytes written since the last sync.
    unsynced: bool,
}

enum Next {
    Missing,
    Preparing(JoinHandle<io::Result<()>>),
    Ready,
}

/// Decodes the record at the start of `bytes`: (batch, payload), or `None` when there is no valid record there.
fn decode(bytes: &[u8]) -> Option<(u64, &[u8])> {
    if bytes.len() < RECORD_HEADER || &bytes[0..4] != RECORD_MAGIC {
        return None;
    }
    let crc = u32::from_le_bytes(bytes[4..8].try_into().ok()?);
    let len = u32::from_le_bytes(bytes[8..12].try_into().ok()?) as usize;
    let batch = u64::from_le_bytes(bytes[12..20].try_into().ok()?);
    let end = RECORD_HEADER.checked_add(len)?;
    if len == 0 || end > bytes.len() || crc32fast::hash(&bytes[8..end]) != crc {
        return None;
    }
    Some((batch, &bytes[RECORD_HEADER..end]))
}

fn encode(out: &mut Vec<u8>, batch: u64, payload: &[u8]) {
    let start = out.len();
    out.extend_from_slice(RECORD_MAGIC);
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&batch.to_le_bytes());
    out.extend_from_slice(payload);
    let crc = crc32fast::hash(&out[start + 8..]);
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
}

/// Creates segment `id` of `bytes` bytes, filled with zeros and synced, under a temporary name renamed at the end:
/// a segment file either exists whole or not at all. Writing zeros (rather than `fallocate`) leaves no unwritten
/// extents, so that a later `fdatasync` of records written over them has no metadata to commit.
pub(crate) fn prepare(dir: &Path, id: u64, bytes: u64) -> io::Result<()> {
    let tmp = dir.join(format!("{}.tmp", segment_name(id)));
    let mut f = File::create(&tmp)?;
    let mut header = [0u8; SEGMENT_HEADER as usize];
    header[..8].copy_from_slice(SEGMENT_MAGIC);
    header[8..12].copy_from_slice(&LOG_VERSION.to_le_bytes());
    f.write_all(&header)?;
    let zeros = vec![0u8; FILL_CHUNK];
    let mut left = bytes.saturating_sub(SEGMENT_HEADER);
    while left > 0 {
        let n = left.min(FILL_CHUNK as u64) as usize;
        f.write_all(&zeros[..n])?;
        left -= n as u64;
    }
    f.sync_all()?;
    std::fs::rename(&tmp, dir.join(segment_name(id)))?;
    File::open(dir)?.sync_all()
}

/// What recovery found past the checkpoint.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Recovered {
    /// Records replayed.
    pub records: u64,
    /// Bytes after the last valid record that were cleared (a write torn by the crash).
    pub torn_bytes: u64,
}

impl Log {
    /// Opens the log in `dir` (created when missing) and replays every record after `from` (the position the redb
    /// tables are known to cover, with the batch number written there) through `apply`, in order. Replay stops at
    /// the first position that holds no valid record; the bytes after it, if any, are a write torn by a crash (a
    /// batch whose sync did not finish, so never acknowledged) and are cleared. If a valid record of a later batch
    /// lies beyond that point, the damage is in synced data, and the log refuses to open rather than drop
    /// acknowledged messages.
    pub(crate) fn open(
        dir: &Path,
        max_segment_bytes: u64,
        from: Pos,
        from_batch: u64,
        mut apply: impl FnMut(Loc, &[u8]) -> Result<(), EngineError>,
    ) -> Result<(Log, Recovered), EngineError> {
        let err = |detail: String| EngineError::Open {
            path: dir.to_path_buf(),
            detail,
        };
        let io = |e: io::Error| err(e.to_string());
        std::fs::create_dir_all(dir).map_err(io)?;
        let mut segments = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(io)? {
            let name = entry.map_err(io)?.file_name();
            let name = name.to_string_lossy();
            if name.ends_with(".seg.tmp") {
                // A preallocation cut short by a crash: never used.
                std::fs::remove_file(dir.join(&*name)).map_err(io)?;
            } else if let Some(id) = name.strip_suffix(".seg").and_then(|s| s.parse().ok()) {
                segments.push(id);
            }
        }
        segments.sort_unstable();
        if segments.is_empty() {
            if from
                != (Pos {
                    segment: 1,
                    offset: SEGMENT_HEADER,
                })
            {
                return Err(err(format!(
                    "the message log is missing: the store expects segment {}",
                    segment_name(from.segment)
                )));
            }
            prepare(dir, 1, segment_size(1, max_segment_bytes)).map_err(io)?;
            segments.push(1);
        }
        let corrupt = |segment: u64, offset: u64, what: &str| {
            err(format!(
                "message log damaged at segment {} offset {offset}: {what}; acknowledged messages follow it, \
                 so the store does not open (restore the file or move it away to accept the loss)",
                segment_name(segment)
            ))
        };
        let mut recovered = Recovered::default();
        let mut segment = from.segment;
        let mut offset = from.offset;
        let mut batch = from_batch;
        let (file, data, stop) = loop {
            if !segments.contains(&segment) {
                return Err(corrupt(segment, offset, "the segment file is missing"));
            }
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(dir.join(segment_name(segment)))
                .map_err(io)?;
            let len = file.metadata().map_err(io)?.len();
            let mut header = [0u8; SEGMENT_HEADER as usize];
            file.read_exact_at(&mut header, 0).map_err(io)?;
            if &header[..8] != SEGMENT_MAGIC {
                return Err(corrupt(segment, 0, "not a message log segment"));
            }
            let version = u32::from_le_bytes(header[8..12].try_into().expect("4 bytes"));
            if version != LOG_VERSION {
                return Err(err(format!(
                    "message log segment {} has format version {version}; this build reads version {LOG_VERSION}",
                    segment_name(segment)
                )));
            }
            if offset > len {
                return Err(corrupt(segment, offset, "shorter than the store expects"));
            }
            let mut data = vec![0u8; (len - offset) as usize];
            file.read_exact_at(&mut data, offset).map_err(io)?;
            let mut at = 0usize;
            let mut sealed = false;
            while let Some((b, payload)) = decode(&data[at..]) {
                if b < batch {
                    break;
                }
                let loc = Loc {
                    segment,
                    offset: offset + at as u64,
                    len: (RECORD_HEADER + payload.len()) as u64,
                };
                batch = b;
                if payload[0] == SEAL {
                    sealed = true;
                    break;
                }
                apply(loc, payload)?;
                recovered.records += 1;
                at += loc.len as usize;
            }
            if sealed {
                segment += 1;
                offset = SEGMENT_HEADER;
                continue;
            }
            break (file, data, at);
        };
        let stop_offset = offset + stop as u64;
        // Anything after the last valid record: a torn batch, or damage to synced data when a valid record of a
        // later batch follows (a batch is written only after the one before it was synced).
        let tail = &data[stop..];
        if let Some(last) = tail.iter().rposition(|&b| b != 0) {
            let garbage = &tail[..=last];
            for hit in memchr::memmem::find_iter(garbage, RECORD_MAGIC) {
                if let Some((b, _)) = decode(&tail[hit..])
                    && b > batch + 1
                {
                    return Err(corrupt(segment, stop_offset, "a damaged record"));
                }
            }
            file.write_all_at(&vec![0u8; garbage.len()], stop_offset)
                .map_err(io)?;
            file.sync_data().map_err(io)?;
            recovered.torn_bytes = garbage.len() as u64;
        }
        if let Some(&after) = segments.iter().find(|&&s| s > segment) {
            // Only the preallocated next segment may follow, unused.
            let mut head = vec![0u8; RECORD_HEADER];
            let f = File::open(dir.join(segment_name(after))).map_err(io)?;
            let unused = after == segment + 1
                && f.read_exact_at(&mut head, SEGMENT_HEADER).is_ok()
                && head.iter().all(|&b| b == 0);
            if !unused || segments.iter().any(|&s| s > segment + 1) {
                return Err(corrupt(
                    segment,
                    stop_offset,
                    "later segments hold records past a damaged one",
                ));
            }
        }
        let capacity = file.metadata().map_err(io)?.len();
        let reader = Arc::new(LogReader {
            dir: dir.to_path_buf(),
            files: RwLock::new(HashMap::new()),
        });
        let file = Arc::new(file);
        reader
            .files
            .write()
            .expect("log files lock")
            .insert(segment, file.clone());
        let log = Log {
            dir: dir.to_path_buf(),
            max_segment_bytes,
            segment,
            file,
            capacity,
            end: stop_offset,
            batch,
            next: if segments.contains(&(segment + 1)) {
                Next::Ready
            } else {
                Next::Missing
            },
            reader,
            buf: Vec::new(),
            unsynced: false,
        };
        Ok((log, recovered))
    }

    pub(crate) fn reader(&self) -> Arc<LogReader> {
        self.reader.clone()
    }

    /// The position after the last record written.
    pub(crate) fn end(&self) -> Pos {
        Pos {
            segment: self.segment,
            offset: self.end,
        }
    }

    /// The last batch number written.
    pub(crate) fn batch(&self) -> u64 {
        self.batch
    }

    fn prepare_next(&mut self) -> io::Result<()> {
        let id = self.segment + 1;
        let (dir, bytes) = (self.dir.clone(), segment_size(id, self.max_segment_bytes));
        let handle = std::thread::Builder::new()
            .name("message-log-prepare".into())
            .spawn(move || prepare(&dir, id, bytes))?;
        self.next = Next::Preparing(handle);
        Ok(())
    }

    /// Moves to the next segment, sealing this one, so that `need` bytes fit.
    fn roll_over(&mut self, need: u64) -> io::Result<()> {
        let next = self.segment + 1;
        match std::mem::replace(&mut self.next, Next::Missing) {
            Next::Preparing(h) => h
                .join()
                .map_err(|_| io::Error::other("the log preallocation thread panicked"))??,
            Next::Ready => {}
            Next::Missing => prepare(&self.dir, next, segment_size(next, self.max_segment_bytes))?,
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(self.dir.join(segment_name(next)))?;
        let mut capacity = file.metadata()?.len();
        if capacity < SEGMENT_HEADER + need + SEAL_LEN {
            // A batch larger than a segment gets a segment of its own, as large as it needs.
            capacity = SEGMENT_HEADER + need + SEAL_LEN;
            file.set_len(capacity)?;
            file.sync_all()?;
        }
        // The seal is synced before anything is written to the next segment: recovery follows a seal only.
        let mut seal = Vec::with_capacity(SEAL_LEN as usize);
        encode(&mut seal, self.batch, &[SEAL]);
        self.file.write_all_at(&seal, self.end)?;
        self.file.sync_data()?;
        let file = Arc::new(file);
        self.reader
            .files
            .write()
            .expect("log files lock")
            .insert(next, file.clone());
        self.segment = next;
        self.file = file;
        self.capacity = capacity;
        self.end = SEGMENT_HEADER;
        self.unsynced = false;
        Ok(())
    }

    /// Appends one batch of records (their payloads) and, when `sync`, waits until they are on disk. Returns where
    /// each record is. After an error the log's state on disk is unknown: the caller must stop writing.
    pub(crate) fn append(&mut self, payloads: &[Vec<u8>], sync: bool) -> io::Result<Vec<Loc>> {
        let batch = self.batch + 1;
        let need: u64 = payloads
            .iter()
            .map(|p| (RECORD_HEADER + p.len()) as u64)
            .sum();
        if self.end + need + SEAL_LEN > self.capacity {
            self.roll_over(need)?;
        }
        self.buf.clear();
        let mut locs = Vec::with_capacity(payloads.len());
        for p in payloads {
            let start = self.buf.len();
            encode(&mut self.buf, batch, p);
            locs.push(Loc {
                segment: self.segment,
                offset: self.end + start as u64,
                len: (self.buf.len() - start) as u64,
            });
        }
        self.file.write_all_at(&self.buf, self.end)?;
        self.batch = batch;
        self.end += need;
        self.unsynced = true;
        if matches!(self.next, Next::Missing) && self.end > self.capacity / 2 {
            self.prepare_next()?;
        }
        if sync {
            self.sync()?;
        }
        Ok(locs)
    }

    /// The file to sync for what was written since the last sync, when something was: for a sync made on another
    /// thread while the caller does other work. The caller must not write again before that sync returned.
    pub(crate) fn take_unsynced(&mut self) -> Option<Arc<File>> {
        std::mem::take(&mut self.unsynced).then(|| self.file.clone())
    }

    /// Waits until everything written is on disk.
    pub(crate) fn sync(&mut self) -> io::Result<()> {
        if self.unsynced {
            self.file.sync_data()?;
            self.unsynced = false;
        }
        Ok(())
    }
}

impl Drop for Log {
    fn drop(&mut self) {
        // Let a preallocation finish rather than leave a thread writing after the store closed.
        if let Next::Preparing(h) = std::mem::replace(&mut self.next, Next::Missing) {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: u64 = 4096;

    fn open(dir: &Path, from: Pos, batch: u64) -> Result<(Log, Vec<Vec<u8>>), EngineError> {
        let mut seen = Vec::new();
        let (log, _) = Log::open(dir, SMALL, from, batch, |_, p| {
            seen.push(p.to_vec());
            Ok(())
        })?;
        Ok((log, seen))
    }

    fn start() -> Pos {
        Pos {
            segment: 1,
            offset: SEGMENT_HEADER,
        }
    }

    fn payload(i: usize, len: usize) -> Vec<u8> {
        let mut p = vec![1u8];
        p.extend((0..len).map(|j| (i * 31 + j) as u8));
        p
    }

    #[test]
    fn records_read_back_and_replay_in_order_across_segments() {
        let dir = tempfile::tempdir().unwrap();
        let (mut log, seen) = open(dir.path(), start(), 0).unwrap();
        assert!(seen.is_empty());
        let mut all = Vec::new();
        let mut locs = Vec::new();
        // 300-byte records into 4 KiB segments: several roll-overs, and one batch larger than a segment.
        for b in 0..20 {
            let n = if b == 7 { 20 } else { 3 };
            let batch: Vec<Vec<u8>> = (0..n).map(|i| payload(b * 100 + i, 300)).collect();
            locs.extend(log.append(&batch, true).unwrap());
            all.extend(batch);
        }
        assert!(log.end().segment > 3, "rolled over: {:?}", log.end());
        let reader = log.reader();
        for (loc, p) in locs.iter().zip(&all) {
            assert_eq!(&reader.read(*loc).unwrap(), p);
        }
        drop(log);
        let (log, seen) = open(dir.path(), start(), 0).unwrap();
        assert_eq!(seen, all);
        // From a checkpoint in the middle: only what follows.
        let mid = locs[10];
        let from = Pos {
            segment: mid.segment,
            offset: mid.offset + mid.len,
        };
        drop(log);
        let (_, seen) = open(dir.path(), from, 4).unwrap();
        assert_eq!(seen, all[11..]);
    }

    fn segment_file(dir: &Path, id: u64) -> PathBuf {
        dir.join(segment_name(id))
    }

    fn write_at(path: &Path, offset: u64, bytes: &[u8]) {
        let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
        f.write_all_at(bytes, offset).unwrap();
    }

    #[test]
    fn a_torn_final_record_is_dropped_and_cleared() {
        let dir = tempfile::tempdir().unwrap();
        let (mut log, _) = open(dir.path(), start(), 0).unwrap();
        log.append(&[payload(1, 100), payload(2, 100)], true)
            .unwrap();
        let locs = log.append(&[payload(3, 100)], true).unwrap();
        drop(log);
        // The crash tore the last record: only its first half reached the disk.
        let path = segment_file(dir.path(), 1);
        let torn = locs[0];
        write_at(
            &path,
            torn.offset + torn.len / 2,
            &vec![0; torn.len as usize / 2],
        );
        let (mut log, seen) = open(dir.path(), start(), 0).unwrap();
        assert_eq!(seen, vec![payload(1, 100), payload(2, 100)]);
        assert_eq!(
            log.end().offset,
            torn.offset,
            "the log continues where the tear was"
        );
        // Cleared: what follows is written over zeros and the next open sees only valid records.
        log.append(&[payload(4, 10)], true).unwrap();
        drop(log);
        let (_, seen) = open(dir.path(), start(), 0).unwrap();
        assert_eq!(seen, vec![payload(1, 100), payload(2, 100), payload(4, 10)]);
    }

    #[test]
    fn a_crc_mismatch_in_the_last_batch_ends_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let (mut log, _) = open(dir.path(), start(), 0).unwrap();
        log.append(&[payload(1, 100)], true).unwrap();
        let last = log
            .append(&[payload(2, 100), payload(3, 100)], true)
            .unwrap();
        drop(log);
        // One flipped payload byte in the last batch: indistinguishable from a torn write of it.
        let path = segment_file(dir.path(), 1);
        write_at(&path, last[0].offset + 30, &[0xFF]);
        let (log, seen) = open(dir.path(), start(), 0).unwrap();
        assert_eq!(seen, vec![payload(1, 100)]);
        let err = log.reader().read(last[1]).unwrap_err().to_string();
        assert!(err.contains("damaged"), "{err}");
    }

    #[test]
    fn a_crc_mismatch_before_later_batches_refuses_to_open() {
        let dir = tempfile::tempdir().unwrap();
        let (mut log, _) = open(dir.path(), start(), 0).unwrap();
        let first = log.append(&[payload(1, 100)], true).unwrap();
        log.append(&[payload(2, 100)], true).unwrap();
        log.append(&[payload(3, 100)], true).unwrap();
        let reader = log.reader();
        drop(log);
        let path = segment_file(dir.path(), 1);
        write_at(&path, first[0].offset + 40, &[0xFF]);
        let err = open(dir.path(), start(), 0)
            .err()
            .expect("refused")
            .to_string();
        assert!(
            err.contains("damaged") && err.contains("offset 16"),
            "{err}"
        );
        // Reads check the CRC too.
        assert!(reader.read(first[0]).is_err());
    }

    #[test]
    fn an_unfinished_preallocation_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let (mut log, _) = open(dir.path(), start(), 0).unwrap();
        log.append(&[payload(1, 10)], true).unwrap();
        drop(log);
        std::fs::write(dir.path().join("0000000009.seg.tmp"), b"partial").unwrap();
        let (_, seen) = open(dir.path(), start(), 0).unwrap();
        assert_eq!(seen, vec![payload(1, 10)]);
        assert!(!dir.path().join("0000000009.seg.tmp").exists());
    }
}
