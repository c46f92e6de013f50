"""Live alarms that keep watching (issue 36): through a guard whose upstream
leaks a canary in phases — good, bad, good again, bad again — the
below-minimum alarm pages for the first incident, resolves when the rate
recovers (the gauge back to 0) and pages again for the second."""

import re
import urllib.request

import openai

from probity_servers import CLIENT_TIMEOUT, completion, guard_toml

USER = [{"role": "user", "content": "Hello there."}]

WATCHED = '''
[[validator]]
name = "no_canary"
message = "The answer leaks the canary"
check = \'\'\'!output.contains("CANARY")\'\'\'
minimum_success_percentage = 0.95
'''

#: (requests, the answer) in order: 150 good, 60 leaking, 600 good, 60 leaking.
PHASES = [(150, "Fine."), (60, "CANARY leaked"), (600, "Fine."), (60, "CANARY leaked")]


def phased(n, body):
    for count, text in PHASES:
        if n < count:
            return 200, completion(text)
        n -= count
    return 200, completion("Fine.")


def alarm_gauge(root):
    text = urllib.request.urlopen(f"{root}/metrics", timeout=CLIENT_TIMEOUT).read().decode()
    gauge = re.search(r'probity_alarm\{check="no_canary",attempt="first",kind="below_minimum"\} (\d+)', text)
    raised = re.search(
        r'probity_alarms_raised\{check="no_canary",attempt="first",kind="below_minimum"\} (\d+)', text)
    return (int(gauge.group(1)) if gauge else None, int(raised.group(1)) if raised else 0)


def test_a_second_incident_pages_again_after_the_first_resolved(guarded):
    guard, up = guarded(phased, attempts=1, checks=WATCHED, extra='on_nothing_passed = "last"')
    client = guard.client()
    seen = []
    n = 0
    for count, _ in PHASES:
        for _ in range(count):
            client.chat.completions.create(model="m", messages=USER)
            n += 1
        seen.append(alarm_gauge(guard.root))
    # After each phase: raised (1, one incident), resolved (0), raised
    # again (1, two incidents).
    assert seen[0] == (None, 0), seen
    assert seen[1] == (1, 1), seen
    assert seen[2] == (0, 1), seen
    assert seen[3] == (1, 2), seen
    log = guard.process.stderr()
    assert log.count("no_canary (first attempts) is detected below its minimum") == 2, log
    assert "is detected back at or above its minimum (resolved)" in log, log
