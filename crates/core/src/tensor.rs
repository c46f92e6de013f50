//! The reliability tensor `R[i][j][k]` (paper §3.6.1): the result of
//! validator `k` on output `j` of input `i`.
//!
//! Cells are packed four to a byte (two bits each), so a tensor of a million
//! outputs × 10 validators takes 2.5 MB. The tensor is built from a stream of
//! verdicts and never holds the outputs themselves.

use crate::stats::Counts;
use crate::verdict::Verdict;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// One packed cell of the tensor.
///
/// `Missing` marks a cell that was never filled (the run stopped, or the
/// output could not be produced and no check ran): it is counted, never
/// silently dropped, and never enters a rate.
///
/// `NotApplicable` marks a check that does not apply to the input (its
/// `when` is false for it, or it is another input's own check): it is
/// neither a pass nor a failure, enters no rate, interval or profile and
/// is counted apart (per check: [`ReliabilityTensor::applicable_inputs`]).
/// Applicability belongs to an (input, check) pair, never to one output:
/// the tensor keeps it in a mask over `(i, k)` beside the packed cells, so
/// one output of an input cannot be applicable and another not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[repr(u8)]
pub enum Cell {
    Missing = 0,
    Pass = 1,
    Fail = 2,
    Error = 3,
    NotApplicable = 4,
}

impl Cell {
    #[inline]
    pub(crate) fn from_bits(bits: u8) -> Cell {
        match bits & 0b11 {
            0 => Cell::Missing,
            1 => Cell::Pass,
            2 => Cell::Fail,
            _ => Cell::Error,
        }
    }

    /// Add this cell to `counts`. A `NotApplicable` cell adds nothing:
    /// [`Counts`] are over the cells a check applies to.
    #[inline]
    pub fn tally(self, counts: &mut Counts) {
        match self {
            Cell::Missing => counts.missing += 1,
            Cell::Pass => counts.pass += 1,
            Cell::Fail => counts.fail += 1,
            Cell::Error => counts.error += 1,
            Cell::NotApplicable => {}
        }
    }
}

impl From<&Verdict> for Cell {
    fn from(v: &Verdict) -> Cell {
        match v {
            Verdict::Pass => Cell::Pass,
            Verdict::Fail => Cell::Fail,
            Verdict::Error { .. } => Cell::Error,
        }
    }
}

/// Errors raised while building a tensor.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum TensorError {
    #[error("a tensor of {inputs} inputs × {repetitions} repetitions × {validators} validators is too large to address")]
    TooLarge {
        inputs: usize,
        repetitions: usize,
        validators: usize,
    },
    #[error("cell ({i}, {j}, {k}) is outside a tensor of shape {shape:?}")]
    OutOfBounds {
        i: usize,
        j: usize,
        k: usize,
        shape: (usize, usize, usize),
    },
    #[error("{got} packed bytes cannot hold a tensor of shape {shape:?} ({expected} bytes)")]
    WrongPacking {
        got: usize,
        expected: usize,
        shape: (usize, usize, usize),
    },
    #[error("check {k} does not apply to input {i}: cell ({i}, {j}, {k}) cannot hold {cell:?}")]
    NotApplicable {
        i: usize,
        j: usize,
        k: usize,
        cell: Cell,
    },
    #[error("output ({i}, {j}) has {got} verdicts but the tensor has {expected} validators")]
    WrongWidth {
        i: usize,
        j: usize,
        got: usize,
        expected: usize,
    },
}

/// `R[i][j][k]` for `N` inputs × `M` repetitions × `K` validators, cells in
/// row-major order `((i·M + j)·K + k)`, two bits each; beside them, which
/// checks do not apply to which inputs: one bit per `(i, k)` at `i·K + k`,
/// held only once a check does not apply somewhere (empty otherwise).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReliabilityTensor {
    inputs: usize,
    repetitions: usize,
    validators: usize,
    bits: Vec<u8>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    not_applicable: Vec<u8>,
}

impl ReliabilityTensor {
    /// An all-`Missing` tensor of the given shape.
    pub fn new(inputs: usize, repetitions: usize, validators: usize) -> Result<Self, TensorError> {
        let len = inputs
            .checked_mul(repetitions)
            .and_then(|x| x.checked_mul(validators))
            .filter(|&x| x <= isize::MAX as usize / 2)
            .ok_or(TensorError::TooLarge {
                inputs,
                repetitions,
                validators,
            })?;
        Ok(ReliabilityTensor {
            inputs,
            repetitions,
            validators,
            bits: vec![0; len.div_ceil(4)],
            not_applicable: Vec::new(),
        })
    }

    /// `(N, M, K)`.
    pub fn shape(&self) -> (usize, usize, usize) {
        (self.inputs, self.repetitions, self.validators)
    }

    /// Number of inputs `N`.
    pub fn inputs(&self) -> usize {
        self.inputs
    }

    /// Number of repetitions (outputs per input) `M`.
    pub fn repetitions(&self) -> usize {
        self.repetitions
    }

    /// Number of validators (and verifiers) `K`.
    pub fn validators(&self) -> usize {
        self.validators
    }

    /// Bytes used by the packed cells.
    pub fn packed_bytes(&self) -> usize {
        self.bits.len()
    }

    /// The packed cells (two bits each, in storage order), followed by the
    /// not-applicable mask (one bit per `(i, k)`) when a check does not
    /// apply to some input: what [`ReliabilityTensor::from_packed`] reads
    /// back.
    pub fn packed(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.bits.len() + self.not_applicable.len());
        out.extend_from_slice(&self.bits);
        out.extend_from_slice(&self.not_applicable);
        out
    }

    /// Bytes of the not-applicable mask of this shape.
    fn mask_len(&self) -> usize {
        (self.inputs * self.validators).div_ceil(8)
    }

    /// A tensor of shape `(inputs, repetitions, validators)` from its
    /// [`ReliabilityTensor::packed`] bytes: the cells alone, or the cells
    /// then the not-applicable mask; an error when their length fits
    /// neither.
    pub fn from_packed(
        inputs: usize,
        repetitions: usize,
        validators: usize,
        mut bits: Vec<u8>,
    ) -> Result<Self, TensorError> {
        let mut tensor = ReliabilityTensor::new(inputs, repetitions, validators)?;
        let (cells, mask) = (tensor.bits.len(), tensor.mask_len());
        if bits.len() == cells + mask && mask > 0 {
            tensor.not_applicable = bits.split_off(cells);
        } else if bits.len() != cells {
            return Err(TensorError::WrongPacking {
                got: bits.len(),
                expected: cells,
                shape: tensor.shape(),
            });
        }
        tensor.bits = bits;
        Ok(tensor)
    }

    /// Whether check `k` applies to input `i` (`false` outside the tensor).
    pub fn applies(&self, i: usize, k: usize) -> bool {
        if i >= self.inputs || k >= self.validators {
            return false;
        }
        let at = i * self.validators + k;
        self.not_applicable
            .get(at >> 3)
            .is_none_or(|b| b & (1 << (at & 7)) == 0)
    }

    /// Record that check `k` does not apply to input `i`: every cell
    /// `(i, ·, k)` reads `NotApplicable` from now on.
    pub fn mark_not_applicable(&mut self, i: usize, k: usize) -> Result<(), TensorError> {
        self.index(i, 0, k).or_else(|e| {
            // A tensor with no repetition still has its (i, k) pairs.
            if i < self.inputs && k < self.validators {
                Ok(0)
            } else {
                Err(e)
            }
        })?;
        if self.not_applicable.is_empty() {
            self.not_applicable = vec![0; self.mask_len()];
        }
        let at = i * self.validators + k;
        self.not_applicable[at >> 3] |= 1 << (at & 7);
        Ok(())
    }

    /// How many inputs check `k` applies to (of [`ReliabilityTensor::inputs`]).
    pub fn applicable_inputs(&self, k: usize) -> usize {
        (0..self.inputs).filter(|&i| self.applies(i, k)).count()
    }

    fn index(&self, i: usize, j: usize, k: usize) -> Result<usize, TensorError> {
        if i >= self.inputs || j >= self.repetitions || k >= self.validators {
            return Err(TensorError::OutOfBounds {
                i,
                j,
                k,
                shape: self.shape(),
            });
        }
        Ok((i * self.repetitions + j) * self.validators + k)
    }

    #[inline]
    fn write(&mut self, idx: usize, cell: Cell) {
        let shift = (idx & 3) * 2;
        let byte = &mut self.bits[idx >> 2];
        *byte = (*byte & !(0b11 << shift)) | ((cell as u8) << shift);
    }

    /// The cell at `idx`: `NotApplicable` when its `(i, k)` is masked.
    #[inline]
    fn read(&self, idx: usize) -> Cell {
        if !self.not_applicable.is_empty() {
            let k = idx % self.validators;
            let i = idx / self.validators / self.repetitions;
            if !self.applies(i, k) {
                return Cell::NotApplicable;
            }
        }
        Cell::from_bits(self.bits[idx >> 2] >> ((idx & 3) * 2))
    }

    /// Write `cell` at `(i, j, k)`: `NotApplicable` masks the whole
    /// `(i, k)`; a verdict into a masked `(i, k)` is refused.
    fn put(
        &mut self,
        (i, j, k): (usize, usize, usize),
        idx: usize,
        cell: Cell,
    ) -> Result<(), TensorError> {
        match (cell, self.applies(i, k)) {
            (Cell::NotApplicable, _) => self.mark_not_applicable(i, k),
            (_, true) => {
                self.write(idx, cell);
                Ok(())
            }
            (_, false) => Err(TensorError::NotApplicable { i, j, k, cell }),
        }
    }

    /// Set `R[i][j][k]`. `NotApplicable` marks check `k` as not applying
    /// to input `i` (all its outputs); any other cell where `k` does not
    /// apply to `i` is an error.
    pub fn set(&mut self, i: usize, j: usize, k: usize, cell: Cell) -> Result<(), TensorError> {
        let idx = self.index(i, j, k)?;
        self.put((i, j, k), idx, cell)
    }

    /// `R[i][j][k]`, or `None` outside the tensor.
    pub fn get(&self, i: usize, j: usize, k: usize) -> Option<Cell> {
        self.index(i, j, k).ok().map(|idx| self.read(idx))
    }

    /// Record all `K` cells of output `j` of input `i` at once, as
    /// [`ReliabilityTensor::set`] does each.
    pub fn set_cells(&mut self, i: usize, j: usize, cells: &[Cell]) -> Result<(), TensorError> {
        if cells.len() != self.validators {
            return Err(TensorError::WrongWidth {
                i,
                j,
                got: cells.len(),
                expected: self.validators,
            });
        }
        for (k, &cell) in cells.iter().enumerate() {
            self.set(i, j, k, cell)?;
        }
        Ok(())
    }

    /// Record all `K` verdicts of output `j` of input `i` at once: the unit
    /// in which a runner produces them.
    pub fn set_output(
        &mut self,
        i: usize,
        j: usize,
        verdicts: &[Verdict],
    ) -> Result<(), TensorError> {
        if verdicts.len() != self.validators {
            return Err(TensorError::WrongWidth {
                i,
                j,
                got: verdicts.len(),
                expected: self.validators,
            });
        }
        if verdicts.is_empty() {
            return Ok(());
        }
        let base = self.index(i, j, 0)?;
        for (k, v) in verdicts.iter().enumerate() {
            self.put((i, j, k), base + k, Cell::from(v))?;
        }
        Ok(())
    }

    /// The `K` cells of output `(i, j)`, appended to `out` (cleared first).
    pub fn output_cells(&self, i: usize, j: usize, out: &mut Vec<Cell>) {
        out.clear();
        if let Ok(base) = self.index(i, j, 0) {
            out.extend((0..self.validators).map(|k| self.read(base + k)));
        }
    }

    /// Visit every cell as `(i, j, k, cell)` in storage order.
    pub fn for_each(&self, mut f: impl FnMut(usize, usize, usize, Cell)) {
        let mut idx = 0;
        for i in 0..self.inputs {
            for j in 0..self.repetitions {
                for k in 0..self.validators {
                    f(i, j, k, self.read(idx));
                    idx += 1;
                }
            }
        }
    }

    /// Counts over the whole tensor.
    pub fn counts(&self) -> Counts {
        let mut c = Counts::default();
        self.for_each(|_, _, _, cell| cell.tally(&mut c));
        c
    }

    /// Marginal counts along each axis, computed in one pass: per input
    /// (over `j, k`), per repetition (over `i, k`), per validator (over
    /// `i, j`) — the raw material of the IRP, ORP and VRP (§3.6.4).
    pub fn marginals(&self) -> Marginals {
        let mut m = Marginals {
            by_input: vec![Counts::default(); self.inputs],
            by_repetition: vec![Counts::default(); self.repetitions],
            by_validator: vec![Counts::default(); self.validators],
        };
        self.for_each(|i, j, k, cell| {
            cell.tally(&mut m.by_input[i]);
            cell.tally(&mut m.by_repetition[j]);
            cell.tally(&mut m.by_validator[k]);
        });
        m
    }

    /// Counts of validator `k` for input `i` (over repetitions); empty
    /// counts when `i` or `k` is out of range.
    pub fn input_counts(&self, i: usize, k: usize) -> Counts {
        let mut c = Counts::default();
        if i < self.inputs && k < self.validators {
            for j in 0..self.repetitions {
                self.read((i * self.repetitions + j) * self.validators + k)
                    .tally(&mut c);
            }
        }
        c
    }

    /// Counts of validator `k` per input (over repetitions): the cells of the
    /// "validating rows" strategy (§2.2.3) for one validator.
    pub fn input_counts_for(&self, k: usize) -> Vec<Counts> {
        let mut out = vec![Counts::default(); self.inputs];
        if k < self.validators {
            for (i, c) in out.iter_mut().enumerate() {
                for j in 0..self.repetitions {
                    self.read((i * self.repetitions + j) * self.validators + k)
                        .tally(c);
                }
            }
        }
        out
    }

    /// Counts of validator `k` per repetition (over inputs): the cells of the
    /// "validating columns" strategy (§2.2.3) for one validator.
    pub fn repetition_counts_for(&self, k: usize) -> Vec<Counts> {
        let mut out = vec![Counts::default(); self.repetitions];
        if k < self.validators {
            for i in 0..self.inputs {
                for (j, c) in out.iter_mut().enumerate() {
                    self.read((i * self.repetitions + j) * self.validators + k)
                        .tally(c);
                }
            }
        }
        out
    }
}

/// Marginal counts along the three axes of a tensor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marginals {
    pub by_input: Vec<Counts>,
    pub by_repetition: Vec<Counts>,
    pub by_validator: Vec<Counts>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_cells_read_back_into_the_same_tensor_and_a_wrong_length_is_refused() {
        let mut t = ReliabilityTensor::new(3, 5, 7).unwrap();
        t.set(2, 4, 6, Cell::Fail).unwrap();
        t.set(0, 1, 2, Cell::Error).unwrap();
        let back = ReliabilityTensor::from_packed(3, 5, 7, t.packed().to_vec()).unwrap();
        assert_eq!(back, t);
        assert_eq!(back.get(2, 4, 6), Some(Cell::Fail));
        let err = ReliabilityTensor::from_packed(3, 5, 8, t.packed().to_vec()).unwrap_err();
        assert!(
            matches!(err, TensorError::WrongPacking { expected: 30, .. }),
            "{err}"
        );
    }

    #[test]
    fn not_applicable_belongs_to_an_input_and_check_and_survives_packing() {
        let mut t = ReliabilityTensor::new(3, 4, 2).unwrap();
        t.set(1, 0, 1, Cell::NotApplicable).unwrap();
        t.set(0, 2, 1, Cell::Pass).unwrap();
        t.set(1, 2, 0, Cell::Fail).unwrap();
        // Every output of input 1 is not applicable to check 1, none other.
        for j in 0..4 {
            assert_eq!(t.get(1, j, 1), Some(Cell::NotApplicable));
        }
        assert_eq!(t.get(1, 2, 0), Some(Cell::Fail));
        assert_eq!(t.get(0, 2, 1), Some(Cell::Pass));
        assert_eq!(t.applicable_inputs(1), 2);
        assert_eq!(t.applicable_inputs(0), 3);
        // A verdict where the check does not apply is refused.
        assert!(matches!(
            t.set(1, 3, 1, Cell::Pass),
            Err(TensorError::NotApplicable {
                i: 1,
                j: 3,
                k: 1,
                ..
            })
        ));
        // Not counted: check 1's counts are over inputs 0 and 2 alone.
        let m = t.marginals();
        assert_eq!(m.by_validator[1].total(), 8);
        assert_eq!(t.input_counts(1, 1).total(), 0);
        // The mask is read back from the packed bytes; the cells alone
        // (a tensor stored before the mask existed) still read.
        let back = ReliabilityTensor::from_packed(3, 4, 2, t.packed()).unwrap();
        assert_eq!(back, t);
        let plain = ReliabilityTensor::new(3, 4, 2).unwrap();
        assert_eq!(plain.packed().len(), 6);
        assert!(ReliabilityTensor::from_packed(3, 4, 2, plain.packed()).is_ok());
        assert!(ReliabilityTensor::from_packed(3, 4, 2, vec![0; 8]).is_err());
    }

    #[test]
    fn cells_round_trip_and_neighbours_are_untouched() {
        let mut t = ReliabilityTensor::new(3, 5, 7).unwrap();
        let cells = [Cell::Pass, Cell::Fail, Cell::Error, Cell::Missing];
        for i in 0..3 {
            for j in 0..5 {
                for k in 0..7 {
                    t.set(i, j, k, cells[(i * 31 + j * 7 + k) % 4]).unwrap();
                }
            }
        }
        for i in 0..3 {
            for j in 0..5 {
                for k in 0..7 {
                    assert_eq!(t.get(i, j, k), Some(cells[(i * 31 + j * 7 + k) % 4]));
                }
            }
        }
        // Overwrite one cell; its neighbours keep their values.
        t.set(1, 2, 3, Cell::Error).unwrap();
        assert_eq!(t.get(1, 2, 3), Some(Cell::Error));
        assert_eq!(t.get(1, 2, 2), Some(cells[(31 + 14 + 2) % 4]));
        assert_eq!(t.get(1, 2, 4), Some(cells[(31 + 14 + 4) % 4]));
    }

    #[test]
    fn out_of_bounds_is_an_error_not_a_panic() {
        let mut t = ReliabilityTensor::new(2, 2, 2).unwrap();
        assert!(matches!(
            t.set(2, 0, 0, Cell::Pass),
            Err(TensorError::OutOfBounds { .. })
        ));
        assert_eq!(t.get(0, 2, 0), None);
        assert!(matches!(
            t.set_output(0, 0, &[Verdict::Pass]),
            Err(TensorError::WrongWidth {
                got: 1,
                expected: 2,
                ..
            })
        ));
        assert!(matches!(
            ReliabilityTensor::new(usize::MAX, 2, 2),
            Err(TensorError::TooLarge { .. })
        ));
    }

    #[test]
    fn a_million_outputs_by_ten_validators_is_small() {
        let t = ReliabilityTensor::new(100_000, 10, 10).unwrap();
        assert_eq!(t.packed_bytes(), 2_500_000);
    }

    #[test]
    fn marginals_add_up() {
        let mut t = ReliabilityTensor::new(2, 3, 2).unwrap();
        t.set_output(0, 0, &[Verdict::Pass, Verdict::Fail]).unwrap();
        t.set_output(0, 1, &[Verdict::Pass, Verdict::Pass]).unwrap();
        t.set_output(1, 2, &[Verdict::error("x"), Verdict::Fail])
            .unwrap();
        let m = t.marginals();
        assert_eq!(
            m.by_validator[0],
            Counts {
                pass: 2,
                fail: 0,
                error: 1,
                missing: 3
            }
        );
        assert_eq!(
            m.by_validator[1],
            Counts {
                pass: 1,
                fail: 2,
                error: 0,
                missing: 3
            }
        );
        assert_eq!(
            m.by_input[0],
            Counts {
                pass: 3,
                fail: 1,
                error: 0,
                missing: 2
            }
        );
        assert_eq!(
            m.by_repetition[2],
            Counts {
                pass: 0,
                fail: 1,
                error: 1,
                missing: 2
            }
        );
        assert_eq!(
            t.input_counts_for(1)[1],
            Counts {
                pass: 0,
                fail: 1,
                error: 0,
                missing: 2
            }
        );
        assert_eq!(
            t.repetition_counts_for(0)[0],
            Counts {
                pass: 1,
                fail: 0,
                error: 0,
                missing: 1
            }
        );
        assert_eq!(t.counts().total(), 12);
    }
}
