"""Issue 2 acceptance items checked from outside with the official ``openai`` SDK.

Beyond the per-feature parity tests in test_openai_sdk.py: legacy completions, Retry-After
forwarding, gateway-only fields stripped while unknown fields pass, 502/504 from an unreachable or
slow upstream, 64 concurrent streaming clients, and a client hang-up reaching the upstream
within 100 ms.
"""

from __future__ import annotations

import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import openai
import pytest

from conftest import UPSTREAM_KEY, Target
from mock_rules import mock_pieces, mock_reply, tokens, unique, usage_of

MESSAGES = [{"role": "user", "content": "Acceptance from the outside, please."}]
REPLY = mock_reply(MESSAGES[0]["content"])


def test_legacy_completions(target: Target, direct_target: Target):
    client = target.client()
    prompt = "Say this is a legacy completion test"
    r = client.completions.create(model="mock-gpt-instruct", prompt=prompt)
    assert re.match(r"^cmpl-mock-\d+$", r.id)
    assert r.object == "text_completion"
    assert r.model == "mock-gpt-instruct"
    assert r.usage.prompt_tokens == tokens(prompt)
    text = r.choices[0].text
    assert text and r.choices[0].finish_reason == "stop"
    assert r.usage.completion_tokens == tokens(text)
    ref = direct_target.client().completions.create(model="mock-gpt-instruct", prompt=prompt)
    assert text == ref.choices[0].text
    assert usage_of(r.usage) == usage_of(ref.usage)
    streamed = "".join(
        c.choices[0].text
        for c in client.completions.create(model="mock-gpt-instruct", prompt=prompt, stream=True)
        if c.choices
    )
    assert streamed == text


@pytest.mark.parametrize("field,value", [("retry_after", 1), ("retry_after_ms", 1500)])
def test_retry_after_headers_forwarded(field: str, value: int, target: Target, mock):
    model = unique("mock-ra")
    mock.script(model, [{"status": 429, field: value}])
    with pytest.raises(openai.RateLimitError) as info:
        target.client(max_retries=0).chat.completions.create(model=model, messages=MESSAGES)
    header = field.replace("_", "-")
    assert info.value.response.headers.get(header) == str(value)


def test_gateway_only_fields_stripped_unknown_kept(gateway_target: Target, mock):
    """Tollgate's own fields never reach the provider; a field it does not know does, unchanged."""
    model = unique("mock-fields")
    unknown = {"future_param": {"nested": [1, "two", None], "flag": True}}
    gateway_only = {
        "tags": ["team-a"],
        "num_retries": 0,
        "cache": {"no-cache": True},
    }
    r = gateway_target.client().chat.completions.create(
        model=model, messages=MESSAGES, extra_body={**unknown, **gateway_only}, temperature=0.25
    )
    assert r.choices[0].message.content == REPLY
    (seen,) = mock.observations(model)
    body = seen["body"]
    assert body["future_param"] == unknown["future_param"]
    assert body["temperature"] == 0.25
    assert body["messages"] == MESSAGES
    assert body["model"] == model
    for key in gateway_only:
        assert key not in body, key
    assert seen["headers"]["authorization"] == f"Bearer {UPSTREAM_KEY}"


def test_client_chosen_upstream_refused_without_the_deployment_s_leave(gateway_target: Target, mock):
    """A body's api_base / api_key is a 400 naming it unless the deployment lists it in
    configurable_clientside_auth_params; nothing reaches any upstream."""
    model = unique("mock-byok")
    for extra, param in [
        ({"api_base": "http://127.0.0.1:9/v1", "api_key": "sk-client-supplied"}, "api_base"),
        ({"api_key": "sk-client-supplied"}, "api_key"),
    ]:
        with pytest.raises(openai.BadRequestError) as info:
            gateway_target.client(max_retries=0).chat.completions.create(
                model=model, messages=MESSAGES, extra_body=extra
            )
        assert info.value.status_code == 400
        assert info.value.body["param"] == param
        assert f"`{param}` is not allowed" in info.value.message
    assert mock.observations(model) == []


def test_upstream_unreachable_is_502(named_target: Target):
    with pytest.raises(openai.InternalServerError) as info:
        named_target.client().chat.completions.create(model="dead-upstream", messages=MESSAGES)
    assert info.value.status_code == 502
    assert set(info.value.body) >= {"message", "type", "param", "code"}
    assert info.value.message


def test_upstream_timeout_is_504(named_target: Target):
    started = time.monotonic()
    with pytest.raises(openai.InternalServerError) as info:
        named_target.client().chat.completions.create(model="slow-upstream", messages=MESSAGES)
    elapsed = time.monotonic() - started
    assert info.value.status_code == 504
    assert set(info.value.body) >= {"message", "type", "param", "code"}
    assert elapsed < 0.95  # the deployment's 0.3 s timeout, not the mock's 1 s delay


N_CLIENTS = 64


def test_64_concurrent_streams(target: Target, mock):
    """64 SDK streams at once, each with its own reply: every chunk arrives, in order."""
    model = unique("mock-conc")
    mock.script(model, [], default={"chunk_delay_ms": 25})
    client = target.client()
    start = threading.Barrier(N_CLIENTS, timeout=10)

    def one(i: int):
        start.wait()
        content = f"client number {i:02d} asks for its own reply"
        pieces, finish = [], None
        for chunk in client.chat.completions.create(
            model=model,
            messages=[{"role": "user", "content": content}],
            stream=True,
            stream_options={"include_usage": True},
        ):
            for choice in chunk.choices:
                pieces.append(choice.delta.content or "")
                finish = choice.finish_reason or finish
        return content, [p for p in pieces if p], finish

    with ThreadPoolExecutor(max_workers=N_CLIENTS) as pool:
        results = list(pool.map(one, range(N_CLIENTS)))
    for content, pieces, finish in results:
        assert pieces == mock_pieces(mock_reply(content))
        assert finish == "stop"
    seen = mock.observations(model)
    assert len(seen) == N_CLIENTS and all(o["status"] == 200 for o in seen)
    # They really ran at the same time: many started before the first one finished.
    first_end = min(o["finished_at"] for o in seen)
    assert sum(o["received_at"] < first_end for o in seen) > N_CLIENTS // 4


def test_client_hangup_reaches_upstream_within_100ms(target: Target, mock):
    model = unique("mock-hangup")
    mock.script(model, [], default={"chunk_delay_ms": 100})
    stream = target.client().chat.completions.create(model=model, messages=MESSAGES, stream=True)
    it = iter(stream)
    first = [next(it), next(it)]
    assert first[0].choices[0].delta.role == "assistant"
    closed_at_ms = time.time() * 1000.0
    stream.close()
    deadline = time.monotonic() + 3.0
    rec = None
    while time.monotonic() < deadline:
        (rec,) = mock.observations(model)
        if rec["client_disconnected"]:
            break
        time.sleep(0.01)
    assert rec is not None and rec["client_disconnected"], rec
    assert rec["finished_at"] is None
    assert rec["client_disconnected_at"] - closed_at_ms < 100.0
