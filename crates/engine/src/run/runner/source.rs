//! Where a run's work comes from: one kind per mode. A fixed-size run hands
//! out every cell not yet done at once; a sequential run one round at a
//! time, until a stop rule settles every verdict; a shared run the cells of
//! the inputs it claims from the store, a batch at a time. (Served answers
//! of `--reuse` are not a source: any cell's first answer may be known.)
//!
//! Cells are numbered `i * M + j`.

use crate::run::claims::ClaimFeed;
use crate::run::rounds::{Next, Rounds};
use crate::store::{Store, StoreError, Writer};
use probity_core::sequential::{SequentialOutcome, StopReason};
use probity_core::stats::StatsError;
use probity_core::ReliabilityTensor;

/// Cells to hand out, and whether they are the last.
pub(super) struct Batch {
    pub cells: Vec<usize>,
    /// No cell will follow: the workers end once these are taken.
    pub last: bool,
}

impl Batch {
    fn last(cells: Vec<usize>) -> Batch {
        Batch { cells, last: true }
    }

    fn more(cells: Vec<usize>) -> Batch {
        Batch { cells, last: false }
    }
}

/// Why a source could not say what comes next.
pub(super) enum SourceError {
    Sequential(StatsError),
    Store(StoreError),
}

impl From<StoreError> for SourceError {
    fn from(e: StoreError) -> Self {
        SourceError::Store(e)
    }
}

impl From<StatsError> for SourceError {
    fn from(e: StatsError) -> Self {
        SourceError::Sequential(e)
    }
}

/// The store a shared run claims from, and its writer (whose commits must
/// land before finished inputs are marked).
pub(super) type StoreSide<'s> = Option<(&'s Store, &'s Writer)>;

pub(super) enum WorkSource {
    /// Every cell not yet done (`done[c]`), handed out at once.
    Every { done: Vec<bool> },
    /// A sequential run's rounds; `done[c]`: cell `c` is recorded.
    Rounds { rounds: Rounds, done: Vec<bool> },
    /// A shared run's claims; `waiting`: nothing was claimable, but other
    /// live workers hold inputs (looked at again on the claim tick: theirs
    /// expire if they die); `workers`: this process's pool, kept busy;
    /// `m`: outputs per input.
    Claims {
        feed: ClaimFeed,
        waiting: bool,
        workers: usize,
        m: usize,
    },
}

impl WorkSource {
    /// The first cells.
    pub async fn first(
        &mut self,
        tensor: &ReliabilityTensor,
        store: StoreSide<'_>,
    ) -> Result<Batch, SourceError> {
        match self {
            WorkSource::Every { done } => {
                Ok(Batch::last((0..done.len()).filter(|&c| !done[c]).collect()))
            }
            WorkSource::Rounds { rounds, done } => Ok(next_round(rounds, tensor, done)?),
            WorkSource::Claims { .. } => self.refill(store).await,
        }
    }

    /// Cell `cell` (of input `input`) was recorded: what follows. Nothing
    /// follows once the run is `interrupted`.
    pub async fn recorded(
        &mut self,
        cell: usize,
        input: usize,
        interrupted: bool,
        tensor: &ReliabilityTensor,
        store: StoreSide<'_>,
    ) -> Result<Option<Batch>, SourceError> {
        match self {
            WorkSource::Every { .. } => Ok(None),
            WorkSource::Rounds { rounds, done } => {
                if let Some(d) = done.get_mut(cell) {
                    *d = true;
                }
                // The round is complete: feed it, then stop or ask for the
                // next.
                if rounds.recorded() && !interrupted {
                    return Ok(Some(next_round(rounds, tensor, done)?));
                }
                Ok(None)
            }
            WorkSource::Claims { feed, workers, .. } => {
                feed.returned(input);
                if feed.outstanding() < *workers && !interrupted {
                    return Ok(Some(self.refill(store).await?));
                }
                Ok(None)
            }
        }
    }

    /// A shared run waiting on other workers' inputs looks again.
    pub async fn tick(&mut self, store: StoreSide<'_>) -> Result<Option<Batch>, SourceError> {
        if !self.waiting() {
            return Ok(None);
        }
        Ok(Some(self.refill(store).await?))
    }

    /// Whether a shared run waits on inputs other workers hold.
    pub fn waiting(&self) -> bool {
        matches!(self, WorkSource::Claims { waiting: true, .. })
    }

    /// Why a sequential run stopped early, once a stop rule said so.
    pub fn stopped(&self) -> Option<StopReason> {
        match self {
            WorkSource::Rounds { rounds, .. } => rounds.stop(),
            _ => None,
        }
    }

    /// A sequential run's outcome after `samples` samples.
    pub fn sequential(&self, samples: u64) -> Option<SequentialOutcome> {
        match self {
            WorkSource::Rounds { rounds, .. } => Some(rounds.outcome(samples)),
            _ => None,
        }
    }

    /// Mark the inputs finished so far done (a shared run).
    pub async fn settle(&mut self, store: StoreSide<'_>) -> Result<(), StoreError> {
        match (self, store) {
            (WorkSource::Claims { feed, .. }, Some((store, writer))) => {
                feed.settle(store, writer).await
            }
            _ => Ok(()),
        }
    }

    /// Keep a shared run's workers busy: mark the inputs finished so far
    /// done, claim the next ones and hand out their cells.
    async fn refill(&mut self, store: StoreSide<'_>) -> Result<Batch, SourceError> {
        let (
            WorkSource::Claims {
                feed, waiting, m, ..
            },
            Some((store, writer)),
        ) = (self, store)
        else {
            return Ok(Batch::more(Vec::new()));
        };
        let m = *m;
        // Finished inputs go to the writer, never waited for: a claim does
        // not wait for a commit.
        feed.queue_done(writer)?;
        let cells: Vec<usize> = feed
            .claim(store)?
            .into_iter()
            .map(|(i, j)| i * m + j)
            .collect();
        *waiting = false;
        if feed.outstanding() > 0 {
            return Ok(Batch::more(cells));
        }
        // Inputs claimed all stored are finished: marked, and waited for,
        // so that `open_inputs` counts this process's own.
        feed.settle(store, writer).await?;
        Ok(match store.open_inputs(feed.run())? {
            (0, _) => Batch::last(cells),
            _ => {
                *waiting = true;
                Batch::more(cells)
            }
        })
    }
}

/// The next round's cells, or the last (empty) batch when a stop rule
/// settled every verdict.
fn next_round(
    rounds: &mut Rounds,
    tensor: &ReliabilityTensor,
    done: &[bool],
) -> Result<Batch, StatsError> {
    Ok(match rounds.advance(tensor, done)? {
        Next::Cells(cells) => Batch::more(cells),
        Next::Stop(_) => Batch::last(Vec::new()),
    })
}
