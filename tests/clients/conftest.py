"""Fixtures for the official-SDK client suite (issue 2 §10).

Starts the real binaries once per session:

* ``tollgate-mock`` on an ephemeral loopback port, replaying ``$TOLLGATE_SHARED_DIR/fixtures``
  (default ``<repo>/../shared/fixtures``) and requiring the upstream key ``sk-upstream-test``, so a
  request only succeeds through the gateway if the gateway sent the deployment's ``api_key``;
* ``tollgate`` (gateway "wildcard") with a LiteLLM config whose only group is ``model_name: "*"``
  -> ``openai/*`` at the mock, so every mock model name works the same directly and through it;
* ``tollgate`` (gateway "named") with named groups only, for ``/v1/models`` and unknown-model 404s;
* ``tollgate`` (gateway "dialects", issue 4) with ``claude/*`` -> ``anthropic/*``, ``gpt/*`` ->
  ``hosted_vllm/*`` and ``oai/*`` -> ``openai/*`` at the mock, for the Messages and Responses suites.

Binaries come from ``$TOLLGATE_BIN_DIR`` (default ``<repo>/target/debug``). Every process is
stopped by PID at session end (SIGTERM, then SIGKILL after 5 s), also from ``atexit`` if pytest
is interrupted before teardown.

The ``target`` fixture is parametrized over ``direct`` (OpenAI client at ``<mock>/v1``) and
``gateway`` (OpenAI client at ``<gateway>/v1`` with the master key): behaviour tests take it and
assert the same values for both.
"""

from __future__ import annotations

import atexit
import os
import re
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

REPO = Path(__file__).resolve().parents[2]
MASTER_KEY = "sk-clients-master"
UPSTREAM_KEY = "sk-upstream-test"
START_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 5.0
# The SDK's default is 600 s; a hung stream must fail the test, not stall the suite.
CLIENT_TIMEOUT_S = 15.0

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_STARTED: list[subprocess.Popen] = []


def shared_dir() -> Path:
    """``$TOLLGATE_SHARED_DIR`` if set, else ``<repo>/../shared`` (where CI puts it)."""
    env = os.environ.get("TOLLGATE_SHARED_DIR")
    return Path(env) if env else REPO.parent / "shared"


def fixtures_dir() -> Path:
    return shared_dir() / "fixtures"


def bin_dir() -> Path:
    env = os.environ.get("TOLLGATE_BIN_DIR")
    return Path(env) if env else REPO / "target" / "debug"


def _stop(proc: subprocess.Popen) -> None:
    """Stop one process we started: SIGTERM, wait, then SIGKILL."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=STOP_TIMEOUT_S)


@atexit.register
def _stop_all_started() -> None:
    for proc in _STARTED:
        _stop(proc)


def _spawn(argv: list[str], log_path: Path, pattern: re.Pattern[str], env: dict[str, str] | None = None):
    """Start ``argv`` with stdout+stderr in ``log_path``; wait for ``pattern`` in the log.

    Returns ``(proc, match)``. A log file (not a pipe) is used so a chatty process never
    blocks on a full pipe. Fails the session with the log if the process exits or times out.
    """
    if not Path(argv[0]).is_file():
        pytest.fail(f"binary not found: {argv[0]} (set TOLLGATE_BIN_DIR or run cargo build --bins)")
    log = open(log_path, "wb")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
    log.close()
    _STARTED.append(proc)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        text = _ANSI.sub("", log_path.read_text(errors="replace"))
        m = pattern.search(text)
        if m:
            return proc, m
        if proc.poll() is not None:
            pytest.fail(f"{argv[0]} exited with {proc.returncode} before listening:\n{text}")
        time.sleep(0.02)
    _stop(proc)
    pytest.fail(f"{argv[0]} did not print its listening line within {START_TIMEOUT_S}s:\n{log_path.read_text()}")


@dataclass
class Mock:
    """A running ``tollgate-mock``: ``url`` is ``http://127.0.0.1:PORT`` (no ``/v1``)."""

    url: str
    proc: subprocess.Popen
    http: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=10.0))

    def script(self, key: str, responses: list[dict[str, Any]], default: dict[str, Any] | None = None) -> None:
        """Queue scripted behaviours for requests whose model (or deployment) is ``key``."""
        body: dict[str, Any] = {"key": key, "responses": responses}
        if default is not None:
            body["default"] = default
        r = self.http.post(f"{self.url}/__script", json=body)
        assert r.status_code == 200, r.text

    def observations(self, model: str | None = None) -> list[dict[str, Any]]:
        """Requests the mock received (not drained), optionally only those for ``model``."""
        r = self.http.get(f"{self.url}/__observations", params={"keep": "1"})
        assert r.status_code == 200, r.text
        reqs = r.json()["requests"]
        return [o for o in reqs if model is None or o.get("model") == model]


@dataclass
class Gateway:
    """A running ``tollgate``: ``url`` is ``http://127.0.0.1:PORT`` (no ``/v1``)."""

    url: str
    proc: subprocess.Popen
    config_path: Path


@dataclass
class Target:
    """Where a behaviour test sends its SDK calls: ``direct`` (mock) or ``gateway`` (tollgate)."""

    name: str
    base_url: str  # ends in /v1
    api_key: str
    _clients: dict = field(default_factory=dict)

    def client(self, max_retries: int = 0) -> openai.OpenAI:
        """An ``openai.OpenAI`` for this target (cached per ``max_retries``)."""
        if max_retries not in self._clients:
            self._clients[max_retries] = openai.OpenAI(
                base_url=self.base_url,
                api_key=self.api_key,
                max_retries=max_retries,
                timeout=CLIENT_TIMEOUT_S,
            )
        return self._clients[max_retries]

    def close(self) -> None:
        for c in self._clients.values():
            c.close()


@pytest.fixture(scope="session")
def workdir():
    with tempfile.TemporaryDirectory(prefix="tollgate-clients-") as d:
        yield Path(d)


@pytest.fixture(scope="session")
def mock(workdir: Path):
    fx = fixtures_dir()
    if not (fx / "openai").is_dir():
        pytest.fail(f"fixtures not found at {fx} (set TOLLGATE_SHARED_DIR)")
    proc, m = _spawn(
        [
            str(bin_dir() / "tollgate-mock"),
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--fixtures",
            str(fx),
            "--require-key",
            UPSTREAM_KEY,
        ],
        workdir / "mock.log",
        re.compile(r"tollgate-mock listening on (http://127\.0\.0\.1:\d+)"),
    )
    server = Mock(url=m.group(1), proc=proc)
    yield server
    server.http.close()
    _stop(proc)


def _gateway_env() -> dict[str, str]:
    env = dict(os.environ)
    # Settings the gateway would read from the environment must come from our config only.
    for name in ("LITELLM_MASTER_KEY", "PORT", "HOST", "CONFIG_FILE_PATH"):
        env.pop(name, None)
    env["RUST_LOG"] = "info"
    env["NO_COLOR"] = "1"
    return env


def _start_gateway(workdir: Path, name: str, config_yaml: str) -> Gateway:
    cfg = workdir / f"{name}.yaml"
    cfg.write_text(config_yaml)
    proc, m = _spawn(
        [str(bin_dir() / "tollgate"), "--config", str(cfg), "--port", "0", "--host", "127.0.0.1"],
        workdir / f"{name}.log",
        re.compile(r"listening on (http://127\.0\.0\.1:\d+)"),
        env=_gateway_env(),
    )
    return Gateway(url=m.group(1), proc=proc, config_path=cfg)


def wildcard_config(mock_url: str) -> str:
    return f"""\
model_list:
  - model_name: "*"
    litellm_params:
      model: openai/*
      api_base: {mock_url}/v1
      api_key: {UPSTREAM_KEY}
router_settings:
  num_retries: 0          # the SDK must see each upstream answer as is (direct vs gateway)
  disable_cooldowns: true
general_settings:
  master_key: {MASTER_KEY}
"""


# Named groups (no wildcard). `gpt-4o-mini` has two deployments: /v1/models lists it once.
# `dead-upstream` points at a closed loopback port; `slow-upstream` has a 0.3 s timeout and the
# mock's `*-slow` model answers after 1 s.
NAMED_GROUPS = ["gpt-4o-mini", "team-chat", "text-embedding-3-small", "dead-upstream", "slow-upstream"]


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def named_config(mock_url: str) -> str:
    return f"""\
model_list:
  - model_name: gpt-4o-mini
    litellm_params:
      model: openai/mock-gpt
      api_base: {mock_url}/v1
      api_key: {UPSTREAM_KEY}
  - model_name: gpt-4o-mini
    litellm_params:
      model: openai/mock-gpt-2
      api_base: {mock_url}/v1
      api_key: {UPSTREAM_KEY}
  - model_name: team-chat
    litellm_params:
      model: openai/mock-team
      api_base: {mock_url}/v1
      api_key: {UPSTREAM_KEY}
  - model_name: text-embedding-3-small
    litellm_params:
      model: openai/mock-embedding
      api_base: {mock_url}/v1
      api_key: {UPSTREAM_KEY}
    model_info:
      mode: embedding
  - model_name: dead-upstream
    litellm_params:
      model: openai/mock-gpt
      api_base: http://127.0.0.1:{closed_port()}/v1
      api_key: {UPSTREAM_KEY}
  - model_name: slow-upstream
    litellm_params:
      model: openai/mock-gpt-slow
      api_base: {mock_url}/v1
      api_key: {UPSTREAM_KEY}
      timeout: 0.3
router_settings:
  num_retries: 0          # the SDK must see each upstream answer as is (direct vs gateway)
  disable_cooldowns: true
general_settings:
  master_key: {MASTER_KEY}
"""


@pytest.fixture(scope="session")
def gateway(mock: Mock, workdir: Path):
    gw = _start_gateway(workdir, "wildcard", wildcard_config(mock.url))
    yield gw
    _stop(gw.proc)


@pytest.fixture(scope="session")
def named_gateway(mock: Mock, workdir: Path):
    gw = _start_gateway(workdir, "named", named_config(mock.url))
    yield gw
    _stop(gw.proc)


@pytest.fixture(scope="session")
def direct_target(mock: Mock):
    t = Target("direct", f"{mock.url}/v1", UPSTREAM_KEY)
    yield t
    t.close()


@pytest.fixture(scope="session")
def gateway_target(gateway: Gateway):
    t = Target("gateway", f"{gateway.url}/v1", MASTER_KEY)
    yield t
    t.close()


@pytest.fixture(scope="session")
def named_target(named_gateway: Gateway):
    t = Target("named-gateway", f"{named_gateway.url}/v1", MASTER_KEY)
    yield t
    t.close()


@pytest.fixture(params=["direct", "gateway"])
def target(request) -> Target:
    """The same test, once against the mock directly and once through Tollgate."""
    return request.getfixturevalue(f"{request.param}_target")


@pytest.fixture(scope="session")
def http():
    with httpx.Client(timeout=CLIENT_TIMEOUT_S) as c:
        yield c


# Issue 4 §6: one gateway serving three dialect families, each a wildcard group at the mock.
# `claude/<m>` -> `anthropic/<m>` (Messages upstream), `gpt/<m>` -> `hosted_vllm/<m>` (OpenAI chat
# upstream, no Responses API: the gateway translates Responses onto chat), `oai/<m>` -> `openai/<m>`
# (Responses passthrough). Mock model-name behaviours (`*-tools`, `fixture/<path>`, ...) apply to `<m>`.
def dialects_config(mock_url: str) -> str:
    return f"""\
model_list:
  - model_name: "claude/*"
    litellm_params:
      model: anthropic/*
      api_base: {mock_url}
      api_key: {UPSTREAM_KEY}
  - model_name: "gpt/*"
    litellm_params:
      model: hosted_vllm/*
      api_base: {mock_url}/v1
      api_key: {UPSTREAM_KEY}
  - model_name: "oai/*"
    litellm_params:
      model: openai/*
      api_base: {mock_url}/v1
      api_key: {UPSTREAM_KEY}
router_settings:
  num_retries: 0          # the SDK must see each upstream answer as is (direct vs gateway)
  disable_cooldowns: true
general_settings:
  master_key: {MASTER_KEY}
"""


@pytest.fixture(scope="session")
def dialects_gateway(mock: Mock, workdir: Path):
    """Tollgate with the ``claude/*``, ``gpt/*`` and ``oai/*`` groups (see ``dialects_config``)."""
    gw = _start_gateway(workdir, "dialects", dialects_config(mock.url))
    yield gw
    _stop(gw.proc)
