#!/usr/bin/env python3
"""A stand-in system under test for probity's command provider.

probity starts this program once per call (provider = "command") and, with
stdin = "json", writes the request to its stdin as one JSON object:

    {"messages": [{"role": "system" | "user" | "assistant", "content": "..."}],
     "repetition": 0, "attempt": 0,
     "input": {"id": "q01", "fields": {"id": "q01", "text": "..."}}}

(an input that carries its own conversation arrives whole, in OpenAI's
chat shape: developer and tool messages, assistant tool_calls included.)

Whatever it prints on stdout is the output; a non-zero exit status is an
error (with the end of stderr as the reason), not a failure.

This one imitates a polite assistant that sometimes slips: it overuses
contractions in about 8% of its answers and forgets "You're welcome" in
about 10% of its answers to thanks. The slips are drawn from the input, the
repetition and POLITE_SEED, so a re-run gives the same outputs. Replace it
with a call to your own system.
"""

import json
import os
import random
import sys


def main() -> int:
    request = json.load(sys.stdin)
    user = [m["content"] for m in request["messages"] if m["role"] == "user"]
    text = user[-1] if user else ""
    seed = os.environ.get("POLITE_SEED", "0")
    rng = random.Random(
        f"{seed}|{request['input']['id']}|{request['repetition']}|{request['attempt']}"
    )

    parts = []
    if "Thank you" in text and rng.random() >= 0.10:
        parts.append("You're welcome!")
    if rng.random() < 0.08:
        parts.append("I'm sure it's fine, don't worry, you'll manage.")
    else:
        topic = " ".join(text.rstrip("?!.").split()[-3:])
        parts.append(f"I am glad to help with {topic}. Here is what I would suggest.")
    print(" ".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
