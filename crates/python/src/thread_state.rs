//! A Python thread state kept on each engine thread that calls Python.
//!
//! Acquiring the GIL from a thread Python does not know (a tokio worker)
//! creates a Python thread state, and releasing it destroys that state
//! again: tens of microseconds per call, more than the call itself. So the
//! first call on such a thread makes a state and keeps it (the GIL
//! released); later acquisitions reuse it. It is released when the thread
//! ends, while the interpreter is still running.

use pyo3::ffi;
use std::cell::RefCell;

/// A kept thread state: `PyGILState_Ensure` then `PyEval_SaveThread`.
struct Kept {
    gstate: ffi::PyGILState_STATE,
    tstate: *mut ffi::PyThreadState,
}

impl Drop for Kept {
    fn drop(&mut self) {
        // SAFETY: the state was made on this thread by `keep` and is not in
        // use (the thread ends); the interpreter is checked to be alive.
        unsafe {
            if ffi::Py_IsInitialized() != 0 {
                ffi::PyEval_RestoreThread(self.tstate);
                ffi::PyGILState_Release(self.gstate);
            }
        }
    }
}

thread_local! {
    static KEPT: RefCell<Option<Kept>> = const { RefCell::new(None) };
}

/// Make sure this thread has a Python thread state that outlives the next
/// GIL acquisition. Call it without the GIL held, before
/// `Python::attach`; on a thread Python already knows it does nothing.
pub fn keep() {
    KEPT.with(|k| {
        let Ok(mut slot) = k.try_borrow_mut() else {
            return;
        };
        if slot.is_some() {
            return;
        }
        // SAFETY: this thread has no Python thread state (checked first), so
        // it does not hold the GIL; Ensure gives it one and the GIL, and
        // SaveThread releases the GIL keeping the state, as `Kept` records.
        unsafe {
            if ffi::Py_IsInitialized() == 0 || !ffi::PyGILState_GetThisThreadState().is_null() {
                return;
            }
            let gstate = ffi::PyGILState_Ensure();
            let tstate = ffi::PyEval_SaveThread();
            *slot = Some(Kept { gstate, tstate });
        }
    });
}
