"""The Python package running predicates against the real model (issue
39, item 1): a provider table for the local server, two predicates (the
paper's `lambda o` and `lambda i, o`), and a `seed` that repeats every
output of a second run."""

import probity

from conftest import INPUTS, MODEL


def few_contractions(o: str) -> bool:
    """Output contains too many contractions"""
    return o.count("'") <= 3


def polite(i: str, o: str) -> bool:
    """System seems to have forgotten its manners"""
    return "welcome" in o if "Thank you" in i else True


CHECKS = [probity.validator(name="no_contractions", minimum=0.9)(few_contractions),
          probity.validator(name="polite", minimum=0.5)(polite)]


def experiment(url: str) -> probity.Experiment:
    return probity.Experiment(
        "real-python",
        {"provider": "openai", "base_url": url, "model": MODEL,
         "temperature": 0.8, "max_tokens": 32, "seed": 11},
        INPUTS[:3],
        CHECKS,
        outputs_per_input=2,
        concurrency=1,
        timeout_s=120,
    )


def test_predicates_judge_the_real_models_outputs_and_a_seed_repeats_them(model_url, tmp_path):
    store = str(tmp_path / "runs.db")
    first = experiment(model_url).run(store=store)
    second = experiment(model_url).run(store=store)
    for result in (first, second):
        assert len(result.samples) == 6
        for s in result.samples:
            assert s.error is None and s.output is not None, s.error
            # Each cell is the predicate's answer on the stored output.
            text = INPUTS[s.input_index]
            expected = [few_contractions(s.output), polite(text, s.output)]
            assert s.cells == [probity.PASS if e else probity.FAIL for e in expected], (s.output, s.cells)
        for name in ("no_contractions", "polite"):
            check = result[name]
            lo, hi = check.interval
            assert 0 <= lo <= check.rate <= hi <= 1, (name, check.rate, check.interval)
            assert check.verdict in ("pass", "fail", "inconclusive"), check.verdict
    # The seed (seed + repetition per call) repeats every output.
    key = lambda s: (s.input_id, s.repetition)  # noqa: E731
    a = {key(s): s.output for s in first.samples}
    b = {key(s): s.output for s in second.samples}
    assert a == b
