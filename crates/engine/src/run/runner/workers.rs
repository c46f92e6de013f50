//! The worker pool: a fixed number of tasks take jobs from one channel,
//! sample them, and send the results back, until the channel is closed and
//! empty or they are told to stop.

use crate::checks::check::StopFlag;
use crate::run::runner::sampler::{Job, Sampled, Sampler};
use std::sync::Arc;
use tokio::sync::{mpsc, watch, Mutex};
use tokio::task::JoinHandle;

pub(super) struct Workers {
    handles: Vec<JoinHandle<()>>,
    /// The jobs; `None` once no more will come (the workers end when the
    /// channel is empty).
    jobs: Option<mpsc::UnboundedSender<Job>>,
    /// Samples done but not yet counted stay few (two per worker): when the
    /// first calls all fail, or a check is broken, the run stops within a
    /// few calls of the rule however slowly its loop is scheduled.
    pub results: mpsc::Receiver<Sampled>,
    /// What the workers watch: set on a cancel, the deadline or a halt. A
    /// worker whose sample was being checked when it was set drops the
    /// sample (its call is counted, not stored: `--resume` asks again).
    /// Aborting alone is not enough: a worker whose next job is ready never
    /// yields, so an abort would not reach it.
    stop: watch::Sender<bool>,
    /// The run's checks' stop flag: outputs not yet checked are not waited
    /// for.
    checks_stop: StopFlag,
}

impl Workers {
    /// Start `count` workers sampling with `sampler`.
    pub fn spawn(sampler: Arc<Sampler>, count: usize, checks_stop: StopFlag) -> Workers {
        let (jobs, jobs_rx) = mpsc::unbounded_channel::<Job>();
        let jobs_rx = Arc::new(Mutex::new(jobs_rx));
        let (tx, results) = mpsc::channel::<Sampled>(count.max(1) * 2);
        let (stop, stop_rx) = watch::channel(false);
        let handles = (0..count)
            .map(|_| {
                tokio::spawn(work(
                    sampler.clone(),
                    jobs_rx.clone(),
                    tx.clone(),
                    stop_rx.clone(),
                ))
            })
            .collect();
        Workers {
            handles,
            jobs: Some(jobs),
            results,
            stop,
            checks_stop,
        }
    }

    /// Hand out one job (dropped once no more are taken).
    pub fn send(&self, job: Job) {
        if let Some(jobs) = &self.jobs {
            let _ = jobs.send(job);
        }
    }

    /// No more jobs will come: the workers end once the queue is empty.
    pub fn close(&mut self) {
        self.jobs = None;
    }

    /// No new sample starts; calls in flight are abandoned.
    pub fn stop(&self) {
        let _ = self.stop.send(true);
        // After the workers' signal: a worker that finds its checks skipped
        // finds the signal set too, and drops the sample.
        self.checks_stop.stop();
        for h in &self.handles {
            h.abort();
        }
    }

    /// Wait for every worker to end.
    pub async fn join(&mut self) {
        for h in self.handles.drain(..) {
            let _ = h.await;
        }
        self.jobs = None;
    }
}

/// One worker: take a job, sample it, send the result; end when the jobs
/// run out, the results are no longer read, or the run stops.
async fn work(
    sampler: Arc<Sampler>,
    jobs: Arc<Mutex<mpsc::UnboundedReceiver<Job>>>,
    results: mpsc::Sender<Sampled>,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        if *stop.borrow() {
            return;
        }
        let next = {
            let mut q = jobs.lock().await;
            tokio::select! {
                w = q.recv() => w,
                _ = stop.wait_for(|c| *c) => None,
            }
        };
        let Some(job) = next else {
            return;
        };
        let sampled = tokio::select! {
            r = async {
                sampler.store_ready().await;
                sampler.sample(job).await
            } => r,
            _ = stop.wait_for(|c| *c) => return,
        };
        if *stop.borrow() || results.send(sampled).await.is_err() {
            return;
        }
    }
}
