"""Per-output overhead of a trivial Python validator against the equivalent
built-in check, in memory on the simulator (bench/python.sh runs it)."""

import os
import time

import probity

INPUTS, OUTPUTS = 100, 200
REPEAT = int(os.environ.get("REPEAT", "5"))
SIM = {"provider": "sim", "contractions": 0.10, "omit_welcome": 0.15}
inputs = [f"Thank you for answer number {i}." for i in range(INPUTS)]


def best(validator) -> float:
    times = []
    for _ in range(REPEAT):
        e = probity.Experiment("bench", SIM, inputs, [validator], outputs_per_input=OUTPUTS, concurrency=16)
        t = time.perf_counter()
        r = e.run()
        times.append(time.perf_counter() - t)
        assert r.shape == (INPUTS, OUTPUTS, 1)
    return min(times)


builtin = best({"name": "contractions", "kind": "count", "value": "'", "max": 3})
expression = best({"name": "contractions", "check": "count(output, \"'\") <= 3"})
python = best(probity.Validator("contractions", "too many", lambda o: o.count("'") <= 3))
n = INPUTS * OUTPUTS
print(f"{n} outputs, best of {REPEAT}:")
print(f"  built-in count:   {builtin:.3f} s  ({builtin / n * 1e6:.1f} µs/output)")
print(f"  rhai expression:  {expression:.3f} s  ({expression / n * 1e6:.1f} µs/output)")
print(f"  Python lambda:    {python:.3f} s  ({python / n * 1e6:.1f} µs/output)")
print(f"Python validator overhead vs built-in: {(python - builtin) / n * 1e6:.1f} µs/output")
