"""`probity serve` judged by clients no one here wrote: the official `openai`
Python package (issue 18, point 6). The servers are in probity_servers.py;
these fixtures start them and stop them at teardown."""

import pytest

from probity_servers import FakeUpstream, Guard, Process, UPSTREAM_KEY, guard_toml


@pytest.fixture
def start_guard(tmp_path):
    """`start_guard(toml_text)`: `probity serve` on 127.0.0.1:0 with that
    configuration, stopped (SIGTERM) at teardown."""
    started = []

    def start(text, token=None):
        d = tmp_path / f"guard{len(started)}"
        d.mkdir()
        (d / "guard.toml").write_text(text)
        env = {"PROBITY_SDK_UPSTREAM_KEY": UPSTREAM_KEY}
        if token is not None:
            env["PROBITY_SDK_TOKEN"] = token
        p = Process(
            ["serve", "--config", str(d / "guard.toml"), "--listen", "127.0.0.1:0",
             "--store", str(d / "runs.db")],
            d, env=env, name="serve",
        )
        started.append(p)
        return Guard(p, token)

    yield start
    for p in started:
        p.stop()


@pytest.fixture
def fake_upstream():
    """`fake_upstream(replies)`: a `FakeUpstream`, closed at teardown."""
    made = []

    def make(replies=None):
        u = FakeUpstream(replies)
        made.append(u)
        return u

    yield make
    for u in made:
        u.close()


@pytest.fixture
def guarded(start_guard, fake_upstream):
    """`guarded(replies, **guard_toml_kw)`: a fake upstream with a guard in
    front of it, returned as `(guard, upstream)`."""

    def make(replies=None, **kw):
        up = fake_upstream(replies)
        return start_guard(guard_toml(up.base_url, **kw)), up

    return make


@pytest.fixture
def sim_serve(tmp_path):
    """`probity sim serve` on 127.0.0.1:0 (the project's simulated upstream)."""
    d = tmp_path / "sim"
    d.mkdir()
    p = Process(["sim", "serve", "--listen", "127.0.0.1:0", "--seed", "7"], d, name="sim")
    yield p
    p.stop()
