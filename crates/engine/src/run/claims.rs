//! A run shared between processes (`probity run --shared`, `probity
//! work`): each takes inputs a batch at a time through the store's claims
//! instead of every cell at once, samples the cells of those inputs not yet
//! stored, and marks an input done once all its samples are committed. A
//! worker killed outright stops refreshing its claims; after
//! [`crate::store::claim_ttl`] another takes its inputs and samples only
//! what was not stored, so the run ends with every sample exactly once.
//!
//! A worker never waits for its writer's commit to go on claiming: a
//! finished input is queued to the writer ([`Writer::send_done`]), which
//! marks it done in the transaction that stores its last samples and keeps
//! this process's claims alive with every batch. It waits only when it
//! has nothing in flight and asks whether the run is over
//! ([`ClaimFeed::settle`]). The store never hands a worker an input it
//! holds itself, and gives up an input that killed
//! [`crate::store::CLAIM_TRIES`] workers ([`Store::given_up_inputs`]).

use crate::store::{Store, StoreError, Writer};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// A claim that comes within this of the one before means the system
/// answers faster than claims and their commits go: the batch doubles.
const FAST_CLAIMS: Duration = Duration::from_millis(250);

/// The most cells one claim takes: at a fast system's pace (10⁴ samples
/// a second and more) well under a second of work, so a worker never sits
/// on inputs the others could take for long, at the end of a run either.
const MOST_CELLS_A_CLAIM: usize = 4096;

/// The inputs this process holds and what is left of them.
pub(crate) struct ClaimFeed {
    run: i64,
    /// Outputs per input (M).
    m: usize,
    /// Inputs claimed at a time: enough to keep the workers busy twice
    /// over, doubled while claims come faster than [`FAST_CLAIMS`] apart
    /// (a 0 ms system: one claim of 64 inputs at a time held a worker to
    /// a quarter of a plain run's pace on SQLite, `bench/store.sh` part 4),
    /// up to [`MOST_CELLS_A_CLAIM`] cells.
    batch: usize,
    /// When the last claim was made.
    last_claim: Option<Instant>,
    /// Per claimed input, its cells handed out and not yet back.
    left: HashMap<usize, usize>,
    /// Inputs whose every sample is sent to the writer, to be marked done
    /// once committed ([`ClaimFeed::settle`]).
    finished: Vec<usize>,
    /// Whether the writer was told this run is shared (it then keeps the
    /// claims alive).
    announced: bool,
    /// Inputs queued as done since the writer last flushed.
    unflushed: bool,
}

impl ClaimFeed {
    /// A feed for `run` of M = `m` that claims enough inputs at a time to
    /// keep `workers` busy twice over.
    pub(crate) fn new(run: i64, m: usize, workers: usize) -> ClaimFeed {
        ClaimFeed {
            run,
            m,
            batch: (2 * workers).div_ceil(m.max(1)).max(1),
            last_claim: None,
            left: HashMap::new(),
            finished: Vec::new(),
            announced: false,
            unflushed: false,
        }
    }

    pub(crate) fn run(&self) -> i64 {
        self.run
    }

    /// Cells handed out and not yet back.
    pub(crate) fn outstanding(&self) -> usize {
        self.left.values().sum()
    }

    /// Claim the next inputs; the `(input, repetition)` cells of theirs
    /// not yet stored (an input some worker left all stored is finished at
    /// once). Empty when no input is left to claim.
    pub(crate) fn claim(&mut self, store: &Store) -> Result<Vec<(usize, usize)>, StoreError> {
        if self.last_claim.is_some_and(|at| at.elapsed() < FAST_CLAIMS) {
            let most = (MOST_CELLS_A_CLAIM / self.m.max(1)).max(1);
            self.batch = (self.batch * 2).min(most).max(self.batch);
        }
        self.last_claim = Some(Instant::now());
        let mut inputs = store.claim_inputs(self.run, self.batch)?;
        // The store never hands back an input this process holds; kept
        // true here too, whatever the store.
        inputs.retain(|i| !self.left.contains_key(i) && !self.finished.contains(i));
        let stored = store.stored_cells_of(self.run, &inputs)?;
        let stored: std::collections::HashSet<(usize, usize)> = stored.into_iter().collect();
        let mut cells = Vec::new();
        for i in inputs {
            let before = cells.len();
            cells.extend((0..self.m).map(|j| (i, j)).filter(|c| !stored.contains(c)));
            match cells.len() - before {
                0 => self.finished.push(i),
                n => {
                    self.left.insert(i, n);
                }
            }
        }
        Ok(cells)
    }

    /// Cell `(i, _)` came back (stored or dropped).
    pub(crate) fn returned(&mut self, i: usize) {
        if let Some(n) = self.left.get_mut(&i) {
            *n -= 1;
            if *n == 0 {
                self.left.remove(&i);
                self.finished.push(i);
            }
        }
    }

    /// Queue the finished inputs to be marked done with their last samples
    /// ([`ClaimFeed::queue_done`]); when no cell is out, also wait for the
    /// writer to commit them, so that [`Store::open_inputs`] read next
    /// counts them (the run's end is then seen at once).
    pub(crate) async fn settle(
        &mut self,
        _store: &Store,
        writer: &Writer,
    ) -> Result<(), StoreError> {
        self.queue_done(writer)?;
        if self.left.is_empty() && self.unflushed {
            // An error here is the writer's, reported when it is finished.
            let _ = writer.flushed().await;
            self.unflushed = false;
        }
        Ok(())
    }

    /// Queue the finished inputs to the writer, which marks them done in
    /// the transaction that commits their last samples: never waits.
    pub(crate) fn queue_done(&mut self, writer: &Writer) -> Result<(), StoreError> {
        if self.finished.is_empty() && self.announced {
            return Ok(());
        }
        self.unflushed |= !self.finished.is_empty();
        writer.send_done(std::mem::take(&mut self.finished))?;
        self.announced = true;
        Ok(())
    }
}
