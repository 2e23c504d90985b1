//! What the store holds about each message, as the public API sees it.

use std::fmt;
use std::str::FromStr;

/// The store's id of a message: assigned on receipt, increasing in the order messages became durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MessageId(pub u64);

impl fmt::Display for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl FromStr for MessageId {
    type Err = std::num::ParseIntError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.parse().map(MessageId)
    }
}

/// Where a message stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Status {
    /// Stored; no route matched.
    Stored,
    /// At least one delivery is still to be made.
    Pending,
    /// Every matching route delivered it.
    Delivered,
    /// At least one delivery was dead-lettered after its last attempt (none pending).
    Dead,
    /// A duplicate (same sender and MSH-10 within the window), stored and counted but not routed.
    Duplicate,
    /// Rejected: stored, not routed, and answered AR/CR (unparseable or oversized) or AE/CE (invalid under
    /// `[validation] mode = "reject"`).
    Rejected,
}

impl Status {
    /// Every status, for validation messages.
    pub const ALL: [Status; 6] = [
        Status::Stored,
        Status::Pending,
        Status::Delivered,
        Status::Dead,
        Status::Duplicate,
        Status::Rejected,
    ];

    /// The lower-case name used in the API and on disk.
    pub fn as_str(&self) -> &'static str {
        match self {
            Status::Stored => "stored",
            Status::Pending => "pending",
            Status::Delivered => "delivered",
            Status::Dead => "dead",
            Status::Duplicate => "duplicate",
            Status::Rejected => "rejected",
        }
    }

    /// Reads a name written by [`Status::as_str`].
    pub fn parse(name: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

/// The state of one message's delivery to one route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DeliveryStatus {
    /// Not yet delivered; will be (again) attempted.
    Pending,
    /// Delivered and acknowledged.
    Delivered,
    /// Given up after the last attempt (replay to try again).
    Dead,
}

impl DeliveryStatus {
    /// The lower-case name used in the API and on disk.
    pub fn as_str(&self) -> &'static str {
        match self {
            DeliveryStatus::Pending => "pending",
            DeliveryStatus::Delivered => "delivered",
            DeliveryStatus::Dead => "dead",
        }
    }

    pub(crate) fn parse(name: &str) -> DeliveryStatus {
        match name {
            "delivered" => DeliveryStatus::Delivered,
            "dead" => DeliveryStatus::Dead,
            _ => DeliveryStatus::Pending,
        }
    }
}

/// The header facts of a stored message.
#[derive(Debug, Clone)]
pub struct MessageSummary {
    /// The store's id.
    pub id: MessageId,
    /// When it was received, in milliseconds since the Unix epoch.
    pub received_ms: u64,
    /// The remote address it came from (empty when it was not received over the network).
    pub peer: String,
    /// MSH-3-1, with `@` MSH-4-1 when that is valued.
    pub sender: String,
    /// MSH-9-1.
    pub message_type: String,
    /// MSH-9-2.
    pub trigger: String,
    /// MSH-10.
    pub control_id: String,
    /// Where it stands.
    pub status: Status,
    /// The earlier message this one duplicates.
    pub duplicate_of: Option<MessageId>,
    /// How many error-severity parse diagnostics it had.
    pub parse_errors: u32,
    /// Its size in bytes as received (for an oversized frame: the whole frame, of which only the head is stored).
    pub size: u64,
    /// Why it was rejected, when it was.
    pub note: Option<String>,
}

/// One delivery attempt.
#[derive(Debug, Clone)]
pub struct Attempt {
    /// When, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// Whether it succeeded.
    pub ok: bool,
    /// What happened (the ACK code, the HTTP status, the error).
    pub detail: String,
}

/// One message's delivery to one route.
#[derive(Debug, Clone)]
pub struct Delivery {
    /// The route's name.
    pub route: String,
    /// Where it stands.
    pub status: DeliveryStatus,
    /// Attempts since it was (re)queued.
    pub attempts: u32,
    /// Every attempt, oldest first (at most the last 50).
    pub history: Vec<Attempt>,
}

/// A stored message with its raw bytes and delivery history.
#[derive(Debug, Clone)]
pub struct StoredMessage {
    /// Its header facts.
    pub summary: MessageSummary,
    /// The exact bytes received (the frame payload).
    pub raw: Vec<u8>,
    /// One entry per route it was routed to.
    pub deliveries: Vec<Delivery>,
}

/// Filters of [`crate::Engine::list`]; `None` matches anything.
#[derive(Debug, Clone, Default)]
pub struct Query {
    /// MSH-9-1.
    pub message_type: Option<String>,
    /// MSH-9-2.
    pub trigger: Option<String>,
    /// The sender as shown in [`MessageSummary::sender`], or its application part.
    pub sender: Option<String>,
    /// MSH-10.
    pub control_id: Option<String>,
    /// Received at or after (ms since the epoch).
    pub since_ms: Option<u64>,
    /// Received before (ms since the epoch).
    pub until_ms: Option<u64>,
    /// Status.
    pub status: Option<Status>,
    /// Skip this many matches (newest first).
    pub offset: usize,
    /// Return at most this many.
    pub limit: usize,
}

/// A page of [`crate::Engine::list`].
#[derive(Debug, Clone)]
pub struct Page {
    /// How many messages match, over all pages.
    pub total: usize,
    /// This page, newest first.
    pub items: Vec<MessageSummary>,
}

/// Counters since the engine started.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Stats {
    /// Frames received (including rejected ones).
    pub received: u64,
    /// Messages answered with an accepting acknowledgement (AA/CA), whether or not MSH-15/16 let it be sent.
    pub acked: u64,
    /// Duplicates detected.
    pub duplicates: u64,
    /// Messages rejected (unparseable or oversized).
    pub rejected: u64,
    /// Deliveries queued on a route (one per message and matching route, replays included).
    pub routed: u64,
    /// Deliveries completed.
    pub delivered: u64,
    /// Delivery attempts that failed (each one is retried until the delivery is dead-lettered).
    pub failed_attempts: u64,
    /// Deliveries dead-lettered.
    pub dead: u64,
    /// Store commits (write transactions), durable or not.
    pub commits: u64,
    /// Store commits that waited for fsync.
    pub durable_commits: u64,
    /// Writes covered by those commits (messages stored, delivery attempts recorded, replays): divided by
    /// `commits`, the group-commit batch size.
    pub committed_ops: u64,
    /// From submitting a message to the store until it is committed: what an acknowledgement waits for.
    pub store_latency: Histogram,
    /// The duration of one store commit.
    pub commit_latency: Histogram,
    /// Per route, in configuration order.
    pub routes: Vec<RouteStats>,
}

/// One route's lag and failures since the engine started.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct RouteStats {
    /// The route's name.
    pub name: String,
    /// Deliveries queued and not yet made or dead-lettered: the route's lag, in messages.
    pub pending: u64,
    /// Deliveries made.
    pub delivered: u64,
    /// Attempts that failed.
    pub failed_attempts: u64,
    /// Deliveries dead-lettered.
    pub dead: u64,
}

/// A latency histogram snapshot, in the shape Prometheus wants.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Histogram {
    /// Observations.
    pub count: u64,
    /// Their sum in seconds.
    pub sum_seconds: f64,
    /// (upper bound in seconds, observations at or below it), ascending; cumulative.
    pub buckets: Vec<(f64, u64)>,
}
