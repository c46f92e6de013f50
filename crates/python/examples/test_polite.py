"""The README's "From Python" example, runnable: `pytest
crates/python/examples`. `my_app` stands for the system under test; here
it is a plain function so the example runs offline."""

import probity


def my_app(question: str) -> str:
    """The system under test: any callable from the input to a str (sync
    or async), or a provider table such as {"provider": "openai", ...}."""
    if "Thank you" in question:
        return "You're welcome! Happy gardening."
    return "Plant bulbs about three times as deep as they are tall."


@probity.validator(name="contraction_validator", minimum=0.95)
def few_contractions(o: str) -> bool:
    """Output contains too many contractions"""
    return o.count("'") <= 3


@probity.validator(name="politeness_validator", minimum=0.90)
def polite(i: probity.Input, o: str) -> bool:
    """System seems to have forgotten its manners"""
    return "You're welcome" in o if "Thank you" in i else True


def experiment() -> probity.Experiment:
    return probity.Experiment(
        "polite-assistant",
        my_app,
        ["Thank you for the tomatoes!", "How deep are bulbs planted?"],
        [few_contractions, polite, {"name": "short", "kind": "words", "max": 300}],
        outputs_per_input=20,
    )


def test_polite_assistant() -> None:
    result = experiment().run()
    probity.assert_reliable(result)  # NotReliableError (an AssertionError) with the failing lines
    assert result["politeness_validator"].rate == 1.0


def test_polite_assistant_with_the_fixture(probity_run: probity.RunFixture) -> None:
    result = probity_run(experiment())  # --probity-store, --probity-outputs apply
    assert result.passed
