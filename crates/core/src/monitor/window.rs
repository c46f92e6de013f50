//! The last N outcomes of a stream, for display: a rate over recent
//! traffic with a Wilson interval at the window's size. A snapshot, not a
//! sequence: it is *not* valid however often it is looked at (alarms use
//! the sequences of [`super::RateWatch`]).

use crate::stats::{proportion_interval, Interval, IntervalMethod};
use std::collections::VecDeque;

/// The last `size` outcomes.
#[derive(Debug, Clone)]
pub struct Window {
    size: usize,
    recent: VecDeque<bool>,
    passes: usize,
}

impl Window {
    /// A window of the last `size` outcomes (at least 1).
    pub fn new(size: usize) -> Window {
        let size = size.max(1);
        Window {
            size,
            recent: VecDeque::with_capacity(size.min(1 << 16)),
            passes: 0,
        }
    }

    pub fn push(&mut self, pass: bool) {
        if self.recent.len() == self.size {
            if let Some(old) = self.recent.pop_front() {
                self.passes -= old as usize;
            }
        }
        self.recent.push_back(pass);
        self.passes += pass as usize;
    }

    /// Outcomes in the window (≤ its size).
    pub fn len(&self) -> usize {
        self.recent.len()
    }

    pub fn is_empty(&self) -> bool {
        self.recent.is_empty()
    }

    /// The window's pass share (0 when empty).
    pub fn rate(&self) -> f64 {
        if self.recent.is_empty() {
            0.0
        } else {
            self.passes as f64 / self.recent.len() as f64
        }
    }

    /// The Wilson interval of the window's rate at `confidence` (the
    /// outcomes taken as independent).
    pub fn interval(&self, confidence: f64) -> Interval {
        proportion_interval(
            self.passes as f64,
            self.recent.len() as f64,
            confidence,
            IntervalMethod::Wilson,
        )
    }
}
