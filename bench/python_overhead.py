"""What Python validators cost per output against the equivalent built-in
checks, in memory on the simulator (bench/python.sh runs it):

* one check, 100 inputs x 200 outputs: ``lambda o: o.count("'") <= 3``
  against the built-in ``count`` (and the same as a rhai expression);
* three checks, 20 inputs x 50 outputs: three Python predicates (one of
  them ``lambda i, o``) against three built-ins.

Each figure is the best of REPEAT runs; the overhead is the difference of
the best wall times, per output."""

import os
import time
from typing import Any, List

import probity

REPEAT = int(os.environ.get("REPEAT", "5"))
SIM = {"provider": "sim", "contractions": 0.10, "omit_welcome": 0.15}


def best(inputs: int, outputs: int, validators: List[Any]) -> float:
    rows = [f"Thank you for answer number {i}." for i in range(inputs)]
    times = []
    for _ in range(REPEAT):
        e = probity.Experiment("bench", SIM, rows, validators, outputs_per_input=outputs, concurrency=16)
        t = time.perf_counter()
        r = e.run()
        times.append(time.perf_counter() - t)
        assert r.shape == (inputs, outputs, len(validators))
    return min(times)


def per_output(seconds: float, n: int) -> str:
    return f"{seconds:.3f} s  ({seconds / n * 1e6:.1f} µs/output)"


n = 100 * 200
builtin = best(100, 200, [{"name": "contractions", "kind": "count", "value": "'", "max": 3}])
expression = best(100, 200, [{"name": "contractions", "check": "count(output, \"'\") <= 3"}])
python = best(100, 200, [probity.Validator("contractions", "too many", lambda o: o.count("'") <= 3)])
print(f"one check, {n} outputs, best of {REPEAT}:")
print(f"  built-in count:   {per_output(builtin, n)}")
print(f"  rhai expression:  {per_output(expression, n)}")
print(f"  Python lambda:    {per_output(python, n)}")
print(f"  Python validator overhead vs built-in: {(python - builtin) / n * 1e6:.1f} µs/output")

n = 20 * 50
builtins3 = best(
    20,
    50,
    [
        {"name": "contractions", "kind": "count", "value": "'", "max": 3},
        {"name": "short", "kind": "words", "max": 300},
        {"name": "calm", "kind": "count", "value": "!", "max": 9},
    ],
)
python3 = best(
    20,
    50,
    [
        probity.Validator("contractions", check=lambda o: o.count("'") <= 3),
        probity.Validator("short", check=lambda o: len(o.split()) <= 300),
        probity.Validator("calm", check=lambda i, o: o.count("!") <= 9),
    ],
)
print(f"three checks, {n} outputs, best of {REPEAT}:")
print(f"  three built-ins:          {per_output(builtins3, n)}")
print(f"  three Python predicates:  {per_output(python3, n)}")
print(f"  overhead vs built-ins: {(python3 - builtins3) / n * 1e6:.1f} µs/output")
