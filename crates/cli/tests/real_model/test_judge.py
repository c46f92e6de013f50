"""A calibrated `[[verifier]]` whose judge is the real model itself (issue
39, items 1 and 2).

The judge is asked with probity's default `structured = "json-schema"`;
llama-cpp-python's server answers that with HTTP 500 ("Input should be
'text' or 'json_object'"), so probity must step down to JSON mode once,
say so, and judge — never stop with exit 2 after retrying every call.

SmolLM2-135M is far too small to judge: on the labelled set below it is
no better than chance (it mostly copies the prompt's example, or writes
unreadable JSON). The report must show that with numbers and refuse a
confident corrected rate: no corrected rate at all, or one whose interval
is wide."""

import json

from conftest import INPUTS, MODEL, inputs_toml, system_table

#: Labels a person would give: polite thanks pass, rudeness fails.
LABELS = [
    ("Thank you for the tomatoes!", "You're welcome! I am glad you enjoyed them.", "PASS"),
    ("Thank you so much for the advice.", "You're welcome. Good luck with the garden.", "PASS"),
    ("Thanks for the seeds!", "You're very welcome, happy planting!", "PASS"),
    ("Thank you for the tomatoes!", "Whatever. Grow your own next time.", "FAIL"),
    ("Thank you so much for the advice.", "I do not care about your garden.", "FAIL"),
    ("Thanks for the seeds!", "Stop bothering me with seeds.", "FAIL"),
]


def test_a_judge_no_better_than_chance_is_reported_as_such(model_url, probity):
    probity.write("labels.jsonl", "".join(
        json.dumps({"input": i, "output": o, "label": label}) + "\n" for i, o, label in LABELS))
    n, m = 2, 2
    config = probity.write("judged.toml", f'''name = "real-judged"
{system_table(model_url)}
[prompt]
system = "You are a polite assistant."
user = "{{{{ input.text }}}}"
[experiment]
outputs_per_input = {m}
concurrency = 1
timeout_s = 120
{inputs_toml(n)}
[[verifier]]
name = "judge"
message = "The judge found the answer impolite"
instructions = "PASS when the answer is polite and, to thanks, says you are welcome. FAIL when it is rude."
minimum_success_percentage = 0.8
calibration = "labels.jsonl"
[verifier.system]
provider = "openai"
base_url = "{model_url}"
model = "{MODEL}"
temperature = 0
max_tokens = 40
''')
    out = probity.run("run", config, "-q")
    # The default mode was refused once and the judge stepped down.
    assert "refused structured output `json-schema`" in out.stderr, out.stderr
    assert "asking with `json-object`" in out.stderr, out.stderr
    assert out.stderr.count("refused structured output") <= 2, out.stderr

    report = probity.report(1)
    # The mode used is stored with the run: every format says it.
    used = {"check": "judge", "asked": "json-schema", "used": "json-object"}
    assert report["run"]["calls"]["structured_output"] == [used], report["run"]
    for fmt in ("text", "markdown", "html"):
        page = probity.run("report", 1, "--format", fmt, ok=(0,)).stdout
        assert "judge json-object (the upstream refused json-schema)" in page, page
    (check,) = report["checks"]
    assert check["kind"] == "verifier"
    rate = check["rate"]
    assert rate["n"] + rate["error"] + rate["missing"] == n * m, rate
    # Every judge answer was asked once per output and label: no call retried
    # on the format refusal (one refusal in all), none lost.
    assert report["run"]["model_calls"] <= n * m + n * m + len(LABELS) + 1, report["run"]

    cal = check["calibration"]
    assert cal is not None, check
    judge = cal["judge"]
    if judge is not None:
        assert judge["labelled"] + judge["errors"] == len(LABELS), judge
        youden = judge["youden"]
        # No better than chance: Se + Sp − 1 not shown above 0.
        assert youden["lower"] <= 0.0, judge
    # A judge no better than chance gives no confident corrected rate.
    if cal["state"] == "unusable":
        assert cal["corrected"] is None and cal["problem"] is not None, cal
        assert cal["problem"]["text"], cal
    else:
        assert cal["weak"] is not None and cal["weak"]["reason"] == "chance", cal
        corrected = cal["corrected"]
        assert corrected["upper"] - corrected["lower"] >= 0.5, cal
    assert check["verdict"]["decision"] != "pass" or not check["verdict"]["established"], check
    text = probity.run("report", 1, ok=(0,)).stdout
    assert "judge" in text
