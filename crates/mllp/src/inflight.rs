//! The replies a connection still owes, in the order their frames arrived.
//!
//! A sender that pipelines (writes several frames before reading the answers) gets its frames handled
//! concurrently: each handler call starts as soon as its frame is read, so that an engine can store them in one
//! group commit, and the answers go back strictly in frame order.

use crate::server::Reply;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

type Handling<'a> = Pin<Box<dyn Future<Output = Reply> + Send + 'a>>;

enum Slot<'a> {
    Running(Handling<'a>),
    Done(Reply),
}

/// Handler calls in frame order, each polled until it finishes.
#[derive(Default)]
pub(crate) struct InFlight<'a> {
    slots: VecDeque<Slot<'a>>,
}

impl<'a> InFlight<'a> {
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Starts a handler call: polls it once right away, so that whatever it does before its first wait (an
    /// engine parses and submits the message to its store) happens in frame order.
    pub(crate) fn push(&mut self, mut handling: Handling<'a>) {
        let waker = std::task::Waker::noop();
        let slot = match handling.as_mut().poll(&mut Context::from_waker(waker)) {
            Poll::Ready(reply) => Slot::Done(reply),
            // Polled again with a real waker by `ready()` before anyone waits on it.
            Poll::Pending => Slot::Running(handling),
        };
        self.slots.push_back(slot);
    }

    /// Waits until the oldest call has finished, then takes every finished call at the front, in order.
    pub(crate) async fn ready(&mut self) -> Vec<Reply> {
        std::future::poll_fn(|cx| self.poll_front(cx)).await;
        let mut out = Vec::new();
        while let Some(Slot::Done(_)) = self.slots.front() {
            if let Some(Slot::Done(reply)) = self.slots.pop_front() {
                out.push(reply);
            }
        }
        out
    }

    /// Polls every running call (a later one may finish first and waits for its turn); ready when the front one
    /// has finished.
    fn poll_front(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        for slot in &mut self.slots {
            if let Slot::Running(handling) = slot
                && let Poll::Ready(reply) = handling.as_mut().poll(cx)
            {
                *slot = Slot::Done(reply);
            }
        }
        match self.slots.front() {
            Some(Slot::Done(_)) => Poll::Ready(()),
            _ => Poll::Pending,
        }
    }
}
