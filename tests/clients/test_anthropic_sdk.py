"""The official ``anthropic`` Python SDK against Tollgate's ``/v1/messages`` (issue 4 §6).

Two backends behind the ``dialects_gateway`` (conftest): ``claude/<m>`` is an ``anthropic/``
deployment (Messages passthrough) and ``gpt/<m>`` a ``hosted_vllm/`` deployment (Messages translated
onto OpenAI chat and back). Every behaviour test runs against both and asserts the same values:
the mock's reply text and token counts follow from the input by its documented rules
(crates/tollgate-mock/README.md, ``mock_rules``), and fixture replays must reach the SDK with exactly
the content, tool ids, names, full arguments, stop reasons and usage the fixture file holds.

Also here: the SDK's exception classes for Tollgate's Anthropic-shaped errors, both client auth
styles (the SDK's ``Authorization: Bearer`` and curl's ``x-api-key`` + ``anthropic-version:
2023-06-01``), the ``/anthropic`` path prefix, and ``messages.count_tokens``.
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx
import pytest

from conftest import CLIENT_TIMEOUT_S, MASTER_KEY, UPSTREAM_KEY, Gateway, Mock
from mock_rules import mock_reply, read_fixture, sse_payloads, tokens, unique

SYSTEM = "You are terse."
USER = "Say hello to the Tollgate client suite, in one line please."
MESSAGES = [{"role": "user", "content": USER}]
REPLY = mock_reply(USER)
# Mock token rule: the system prompt counts as one more message (3 tokens of overhead each).
INPUT_TOKENS = tokens(SYSTEM + USER) + 3 * 2
OUTPUT_TOKENS = tokens(REPLY)

# Upstream model prefix per backend: the mock names come from `unique(...)` so observations and
# scripts stay per test.
BACKENDS = {
    "anthropic": ("claude", "mock-claude"),
    "openai": ("gpt", "mock-gpt"),
}

# Stream fixtures replayed by the mock (model `fixture/<path>`), per backend.
TOOLS_STREAM_FIXTURE = {
    "anthropic": "anthropic/messages/tools.stream.sse",
    "openai": "openai/chat/tools.stream.sse",
}


def client(gw: Gateway, *, path: str = "", **kw: Any) -> anthropic.Anthropic:
    """An SDK client at the gateway (``path`` = optional prefix such as ``/anthropic``)."""
    kw.setdefault("max_retries", 0)
    if "auth_token" not in kw:
        kw.setdefault("api_key", MASTER_KEY)
    return anthropic.Anthropic(base_url=gw.url + path, timeout=CLIENT_TIMEOUT_S, **kw)


@pytest.fixture(scope="module")
def sdk(dialects_gateway: Gateway):
    c = client(dialects_gateway)
    yield c
    c.close()


@pytest.fixture(params=sorted(BACKENDS))
def backend(request) -> str:
    return request.param


def model_for(backend: str, suffix: str = "") -> tuple[str, str]:
    """``(gateway model name, upstream model name)`` for a fresh mock model on ``backend``."""
    group, base = BACKENDS[backend]
    upstream = unique(base, suffix)
    return f"{group}/{upstream}", upstream


def fixture_tool_uses(backend: str) -> list[dict[str, Any]]:
    """The complete tool calls of the backend's tools stream fixture, in order.

    Anthropic: ``content_block_start`` tool_use blocks plus their ``input_json_delta`` fragments.
    OpenAI chat: ``tool_calls`` deltas merged by ``index``. Returned as
    ``{"id", "name", "input"}`` with ``input`` parsed from the joined fragments.
    """
    events = sse_payloads(read_fixture(TOOLS_STREAM_FIXTURE[backend]))
    calls: dict[int, dict[str, Any]] = {}
    if backend == "anthropic":
        for e in events:
            if e["type"] == "content_block_start" and e["content_block"]["type"] == "tool_use":
                b = e["content_block"]
                calls[e["index"]] = {"id": b["id"], "name": b["name"], "args": ""}
            elif e["type"] == "content_block_delta" and e["delta"]["type"] == "input_json_delta":
                calls[e["index"]]["args"] += e["delta"]["partial_json"]
    else:
        for e in events:
            for ch in e.get("choices", []):
                for tc in ch["delta"].get("tool_calls") or []:
                    c = calls.setdefault(tc["index"], {"id": None, "name": None, "args": ""})
                    c["id"] = tc.get("id") or c["id"]
                    c["name"] = tc.get("function", {}).get("name") or c["name"]
                    c["args"] += tc.get("function", {}).get("arguments") or ""
    return [{"id": c["id"], "name": c["name"], "input": json.loads(c["args"])} for _, c in sorted(calls.items())]


def fixture_text_and_usage(backend: str) -> tuple[str, int, int]:
    """Text content and (input, output) tokens of the backend's tools stream fixture."""
    events = sse_payloads(read_fixture(TOOLS_STREAM_FIXTURE[backend]))
    if backend == "anthropic":
        text = "".join(
            e["delta"]["text"]
            for e in events
            if e["type"] == "content_block_delta" and e["delta"]["type"] == "text_delta"
        )
        start = next(e for e in events if e["type"] == "message_start")["message"]["usage"]
        out = [e for e in events if e["type"] == "message_delta"][-1]["usage"]["output_tokens"]
        return text, start["input_tokens"], out
    text = "".join(ch["delta"].get("content") or "" for e in events for ch in e.get("choices", []))
    usage = [e for e in events if e.get("usage")][-1]["usage"]
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    return text, usage["prompt_tokens"] - cached, usage["completion_tokens"]


# ---------------------------------------------------------------------------------------------
# plain and streamed text


def test_plain_message(sdk: anthropic.Anthropic, backend: str):
    model, _ = model_for(backend)
    msg = sdk.messages.create(model=model, max_tokens=256, system=SYSTEM, messages=MESSAGES)
    assert msg.type == "message"
    assert msg.role == "assistant"
    assert [b.type for b in msg.content] == ["text"]
    assert msg.content[0].text == REPLY
    assert msg.stop_reason == "end_turn"
    assert msg.stop_sequence is None
    assert (msg.usage.input_tokens, msg.usage.output_tokens) == (INPUT_TOKENS, OUTPUT_TOKENS)
    assert msg.id.startswith("msg_") or msg.id.startswith("chatcmpl-")


def test_streamed_message(sdk: anthropic.Anthropic, backend: str):
    model, _ = model_for(backend)
    with sdk.messages.stream(model=model, max_tokens=256, system=SYSTEM, messages=MESSAGES) as stream:
        pieces = list(stream.text_stream)
        final = stream.get_final_message()
    assert "".join(pieces) == REPLY
    # The mock streams the reply in 8 runs; a gateway holding text back would deliver fewer deltas.
    assert len([p for p in pieces if p]) == 8
    assert [b.type for b in final.content] == ["text"]
    assert final.content[0].text == REPLY
    assert final.stop_reason == "end_turn"
    assert (final.usage.input_tokens, final.usage.output_tokens) == (INPUT_TOKENS, OUTPUT_TOKENS)


def test_max_tokens_truncates(sdk: anthropic.Anthropic, backend: str):
    """``max_tokens`` reaches the upstream and its stop reason maps back to ``max_tokens``."""
    model, _ = model_for(backend)
    msg = sdk.messages.create(model=model, max_tokens=3, messages=MESSAGES)
    assert msg.stop_reason == "max_tokens"
    assert msg.usage.output_tokens == 3
    assert REPLY.startswith(msg.content[0].text) and len(msg.content[0].text) < len(REPLY)


def test_anthropic_path_prefix(dialects_gateway: Gateway, backend: str):
    """``/anthropic/v1/messages`` serves the same as ``/v1/messages``."""
    model, _ = model_for(backend)
    with client(dialects_gateway, path="/anthropic") as c:
        msg = c.messages.create(model=model, max_tokens=256, system=SYSTEM, messages=MESSAGES)
    assert msg.content[0].text == REPLY
    assert (msg.usage.input_tokens, msg.usage.output_tokens) == (INPUT_TOKENS, OUTPUT_TOKENS)


# ---------------------------------------------------------------------------------------------
# tool use and thinking


def test_tool_use_streamed_from_fixture(sdk: anthropic.Anthropic, backend: str):
    """Every argument fragment arrives: the final ``tool_use.input`` is the fixture's complete JSON."""
    group = BACKENDS[backend][0]
    model = f"{group}/fixture/{TOOLS_STREAM_FIXTURE[backend]}"
    expected_calls = fixture_tool_uses(backend)
    text, input_tokens, output_tokens = fixture_text_and_usage(backend)
    assert len(expected_calls) == 2 and all(c["input"] for c in expected_calls)

    partial: dict[int, str] = {}
    with sdk.messages.stream(model=model, max_tokens=256, messages=[{"role": "user", "content": "weather?"}]) as stream:
        for event in stream:
            if event.type == "content_block_delta" and event.delta.type == "input_json_delta":
                partial[event.index] = partial.get(event.index, "") + event.delta.partial_json
        final = stream.get_final_message()

    tool_uses = [b for b in final.content if b.type == "tool_use"]
    assert [{"id": b.id, "name": b.name, "input": b.input} for b in tool_uses] == expected_calls
    # The raw fragments on the wire also join to the complete arguments (not only the SDK's merge).
    assert [json.loads(s) for _, s in sorted(partial.items())] == [c["input"] for c in expected_calls]
    texts = [b.text for b in final.content if b.type == "text"]
    assert "".join(texts) == text
    assert final.stop_reason == "tool_use"
    assert final.usage.output_tokens == output_tokens
    assert final.usage.input_tokens == input_tokens


def test_tool_use_forced_by_tool_choice(sdk: anthropic.Anthropic, backend: str):
    """``tool_choice: any`` (→ ``required`` on chat) makes the mock call the tool with schema-built args."""
    model, _ = model_for(backend)
    tool = {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "input_schema": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer"},
            },
            "required": ["city", "unit"],
        },
    }
    msg = sdk.messages.create(
        model=model, max_tokens=256, messages=MESSAGES, tools=[tool], tool_choice={"type": "any"}
    )
    tool_uses = [b for b in msg.content if b.type == "tool_use"]
    assert len(tool_uses) == 1
    assert tool_uses[0].name == "get_weather"
    assert tool_uses[0].input == {"city": "mock-city", "unit": "celsius", "days": 42}
    assert tool_uses[0].id.startswith("toolu_mock_" if backend == "anthropic" else "call_mock_")
    assert msg.stop_reason == "tool_use"
    args = json.dumps(tool_uses[0].input, separators=(",", ":"))
    assert msg.usage.output_tokens == tokens("get_weather" + args)


THINKING_FIXTURE = "anthropic/messages/thinking_tools.stream.sse"


def test_thinking_streamed_passthrough(sdk: anthropic.Anthropic):
    events = sse_payloads(read_fixture(THINKING_FIXTURE))
    deltas = [e["delta"] for e in events if e["type"] == "content_block_delta"]
    thinking = "".join(d["thinking"] for d in deltas if d["type"] == "thinking_delta")
    signature = "".join(d["signature"] for d in deltas if d["type"] == "signature_delta")
    assert thinking and signature

    seen_thinking: list[str] = []
    with sdk.messages.stream(
        model=f"claude/fixture/{THINKING_FIXTURE}",
        max_tokens=2048,
        thinking={"type": "enabled", "budget_tokens": 1024},
        messages=[{"role": "user", "content": "weather in Paris?"}],
    ) as stream:
        for event in stream:
            if event.type == "thinking":
                seen_thinking.append(event.thinking)
        final = stream.get_final_message()

    assert "".join(seen_thinking) == thinking
    assert final.content[0].type == "thinking"
    assert final.content[0].thinking == thinking
    assert final.content[0].signature == signature
    assert final.content[1].type == "tool_use"
    assert final.content[1].id == "toolu_mock_weather_01"
    assert final.content[1].input == {"city": "Paris", "unit": "celsius"}
    assert final.stop_reason == "tool_use"
    assert final.usage.output_tokens == [e for e in events if e["type"] == "message_delta"][-1]["usage"]["output_tokens"]


def test_thinking_signature_round_trips_to_anthropic_upstream(sdk: anthropic.Anthropic, mock: Mock):
    """The thinking block from turn 1 (with signature) reaches the Anthropic upstream intact on turn 2."""
    model, upstream = model_for("anthropic", "-thinking")
    first = sdk.messages.create(
        model=model,
        max_tokens=2048,
        thinking={"type": "enabled", "budget_tokens": 1024},
        messages=MESSAGES,
    )
    assert first.content[0].type == "thinking"
    assert first.content[0].thinking == "Thinking about: " + USER[:40]
    assert first.content[0].signature
    assert first.content[1].type == "text" and first.content[1].text == REPLY
    # Thinking tokens count as output.
    assert first.usage.output_tokens == tokens(first.content[0].thinking) + tokens(REPLY)

    sdk.messages.create(
        model=model,
        max_tokens=2048,
        thinking={"type": "enabled", "budget_tokens": 1024},
        messages=[
            *MESSAGES,
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
            {"role": "user", "content": "And again?"},
        ],
    )
    seen = mock.observations(upstream)
    assert len(seen) == 2
    block = seen[1]["body"]["messages"][1]["content"][0]
    assert block == {
        "type": "thinking",
        "thinking": first.content[0].thinking,
        "signature": first.content[0].signature,
    }


# ---------------------------------------------------------------------------------------------
# errors


def test_bad_key_raises_authentication_error(dialects_gateway: Gateway):
    with client(dialects_gateway, api_key="sk-not-the-master-key") as c:
        with pytest.raises(anthropic.AuthenticationError) as ei:
            c.messages.create(model="claude/mock-claude", max_tokens=16, messages=MESSAGES)
    assert ei.value.status_code == 401
    assert ei.value.body["type"] == "error"
    assert ei.value.body["error"]["type"] == "authentication_error"


def test_unknown_model_raises_not_found(sdk: anthropic.Anthropic):
    with pytest.raises(anthropic.NotFoundError) as ei:
        sdk.messages.create(model="no-such-group", max_tokens=16, messages=MESSAGES)
    assert ei.value.status_code == 404
    assert ei.value.body["type"] == "error"
    assert ei.value.body["error"]["type"] == "not_found_error"


def test_missing_max_tokens_raises_bad_request(sdk: anthropic.Anthropic, backend: str):
    """The SDK insists on ``max_tokens``; its low-level ``post`` sends a body without it."""
    model, upstream = model_for(backend)
    with pytest.raises(anthropic.BadRequestError) as ei:
        sdk.post(
            "/v1/messages",
            cast_to=anthropic.types.Message,
            body={"model": model, "messages": MESSAGES},
        )
    assert ei.value.status_code == 400
    assert ei.value.body["type"] == "error"
    assert ei.value.body["error"]["type"] == "invalid_request_error"
    assert "max_tokens" in ei.value.body["error"]["message"]


@pytest.mark.parametrize("model", ["claude/mock-overloaded", "gpt/mock-overloaded"])
def test_overloaded_raises_overloaded_error(sdk: anthropic.Anthropic, model: str):
    """Anthropic's 529 passes through; an OpenAI upstream's 503 ``overloaded`` becomes 529 too."""
    with pytest.raises(anthropic.OverloadedError) as ei:
        sdk.messages.create(model=model, max_tokens=16, messages=MESSAGES)
    assert isinstance(ei.value, anthropic.InternalServerError)
    assert ei.value.status_code == 529
    assert ei.value.body["type"] == "error"
    assert ei.value.body["error"]["type"] == "overloaded_error"


def test_midstream_error_surfaces_as_sdk_error(sdk: anthropic.Anthropic, backend: str):
    """An upstream error after 3 content chunks reaches the SDK as an Anthropic ``error`` event."""
    model, _ = model_for(backend, "-midstream-error")
    pieces: list[str] = []
    with pytest.raises(anthropic.APIStatusError) as ei:
        with sdk.messages.stream(model=model, max_tokens=256, messages=MESSAGES) as stream:
            for text in stream.text_stream:
                pieces.append(text)
    assert REPLY.startswith("".join(pieces)) and "".join(pieces) != REPLY
    assert ei.value.body["type"] == "error"


# ---------------------------------------------------------------------------------------------
# auth styles


def _upstream_auth(mock: Mock, upstream: str) -> dict[str, str]:
    (obs,) = mock.observations(upstream)
    return obs["headers"]


def test_auth_api_key_sends_bearer(dialects_gateway: Gateway, mock: Mock):
    model, upstream = model_for("anthropic")
    with client(dialects_gateway) as c:
        raw = c.messages.with_raw_response.create(model=model, max_tokens=256, messages=MESSAGES)
    assert raw.http_request.headers["authorization"] == f"Bearer {MASTER_KEY}"
    assert "x-api-key" not in raw.http_request.headers
    assert raw.parse().content[0].text == REPLY
    # The upstream gets the deployment's key as x-api-key, never the client's master key.
    h = _upstream_auth(mock, upstream)
    assert h["x-api-key"] == UPSTREAM_KEY
    assert "authorization" not in h


def test_anthropic_beta_forwarded(sdk: anthropic.Anthropic, mock: Mock):
    model, upstream = model_for("anthropic")
    beta = "tools-2024-05-16,output-128k-2025-02-19"
    msg = sdk.messages.create(
        model=model, max_tokens=256, messages=MESSAGES, extra_headers={"anthropic-beta": beta}
    )
    assert msg.content[0].text == REPLY
    assert _upstream_auth(mock, upstream)["anthropic-beta"] == beta


def test_client_anthropic_version_forwarded(sdk: anthropic.Anthropic, mock: Mock):
    model, upstream = model_for("anthropic")
    raw = sdk.messages.with_raw_response.create(model=model, max_tokens=256, messages=MESSAGES)
    sent = raw.http_request.headers["anthropic-version"]
    assert sent != "2023-06-01"
    assert _upstream_auth(mock, upstream)["anthropic-version"] == sent


def test_auth_token_sends_bearer(dialects_gateway: Gateway):
    model, _ = model_for("openai")
    with client(dialects_gateway, auth_token=MASTER_KEY) as c:
        raw = c.messages.with_raw_response.create(model=model, max_tokens=256, messages=MESSAGES)
    assert raw.http_request.headers["authorization"] == f"Bearer {MASTER_KEY}"
    assert raw.parse().content[0].text == REPLY


def test_auth_x_api_key_raw_http(dialects_gateway: Gateway, mock: Mock, backend: str):
    """curl style: ``x-api-key`` with ``anthropic-version: 2023-06-01`` and no Authorization."""
    model, upstream = model_for(backend)
    with httpx.Client(timeout=CLIENT_TIMEOUT_S) as h:
        r = h.post(
            f"{dialects_gateway.url}/v1/messages",
            headers={"x-api-key": MASTER_KEY, "anthropic-version": "2023-06-01"},
            json={"model": model, "max_tokens": 256, "system": SYSTEM, "messages": MESSAGES},
        )
        bad = h.post(
            f"{dialects_gateway.url}/v1/messages",
            headers={"x-api-key": "sk-wrong", "anthropic-version": "2023-06-01"},
            json={"model": model, "max_tokens": 256, "messages": MESSAGES},
        )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["content"] == [{"type": "text", "text": REPLY}]
    assert body["stop_reason"] == "end_turn"
    assert body["usage"]["input_tokens"] == INPUT_TOKENS
    assert body["usage"]["output_tokens"] == OUTPUT_TOKENS
    assert bad.status_code == 401
    assert bad.json()["error"]["type"] == "authentication_error"
    h = _upstream_auth(mock, upstream)
    if backend == "anthropic":
        assert h["x-api-key"] == UPSTREAM_KEY
        assert h["anthropic-version"] == "2023-06-01"
    else:
        assert h["authorization"] == f"Bearer {UPSTREAM_KEY}"


# ---------------------------------------------------------------------------------------------
# count_tokens


def test_count_tokens_passthrough(sdk: anthropic.Anthropic, mock: Mock):
    model, upstream = model_for("anthropic")
    got = sdk.messages.count_tokens(model=model, system=SYSTEM, messages=MESSAGES)
    # The mock answers count_tokens with its prompt rule, the same number a create reports.
    assert got.input_tokens == INPUT_TOKENS
    (obs,) = mock.observations(upstream)
    assert obs["route"] == "/messages/count_tokens"
    assert obs["body"]["model"] == upstream


def test_count_tokens_on_openai_backend_is_estimated(sdk: anthropic.Anthropic, mock: Mock):
    """No count endpoint upstream: the gateway answers an estimate without calling the upstream."""
    model, upstream = model_for("openai")
    got = sdk.messages.count_tokens(model=model, messages=MESSAGES)
    assert got.input_tokens > 0
    longer = sdk.messages.count_tokens(model=model, messages=[{"role": "user", "content": USER * 10}])
    assert longer.input_tokens > got.input_tokens
    assert mock.observations(upstream) == []


# ---------------------------------------------------------------------------------------------
# tool results (with an image) toward an OpenAI-dialect upstream

# A 1x1 transparent PNG.
PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="


def test_tool_result_with_image_reaches_openai_upstream(sdk: anthropic.Anthropic, mock: Mock):
    model, upstream = model_for("openai")
    tool = {"name": "get_chart", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}
    msg = sdk.messages.create(
        model=model,
        max_tokens=256,
        tools=[tool],
        messages=[
            {"role": "user", "content": "Chart for Paris?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Fetching it."},
                    {"type": "tool_use", "id": "toolu_img_01", "name": "get_chart", "input": {"city": "Paris"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_img_01",
                        "content": [
                            {"type": "text", "text": "chart attached"},
                            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}},
                        ],
                    },
                    {"type": "text", "text": "Describe it."},
                ],
            },
        ],
    )
    assert msg.content[0].type == "text" and msg.content[0].text.startswith("This is a mock response")
    (obs,) = mock.observations(upstream)
    msgs = obs["body"]["messages"]
    (assistant,) = [m for m in msgs if m["role"] == "assistant"]
    (tc,) = assistant["tool_calls"]
    assert (tc["id"], tc["function"]["name"]) == ("toolu_img_01", "get_chart")
    assert json.loads(tc["function"]["arguments"]) == {"city": "Paris"}
    (tool_msg,) = [m for m in msgs if m["role"] == "tool"]
    assert tool_msg["tool_call_id"] == "toolu_img_01"
    assert "chart attached" in json.dumps(tool_msg["content"])
    after = msgs[msgs.index(tool_msg):]
    # The image is not dropped: it reaches the upstream as a data URL after the tool call.
    assert f"data:image/png;base64,{PNG_B64}" in json.dumps(after)
    assert assistant["content"] in ("Fetching it.", [{"type": "text", "text": "Fetching it."}])
    # Tool results come before the user's text of the same turn (wire-formats §7.2): the turn ends
    # with a user message whose last part is that text.
    last = msgs[-1]
    assert last["role"] == "user" and msgs.index(tool_msg) < len(msgs) - 1
    tail = last["content"] if isinstance(last["content"], str) else last["content"][-1]["text"]
    assert tail == "Describe it."


# ---------------------------------------------------------------------------------------------
# UTF-8 across reads

UNICODE_STREAM_FIXTURE = {
    "anthropic": "anthropic/messages/unicode.stream.sse",
    "openai": "openai/chat/unicode.stream.sse",
}


def test_unicode_stream_fixture_split_mid_codepoint(sdk: anthropic.Anthropic, backend: str):
    """The mock writes the fixture in pieces cut inside multi-byte characters (``.splits.json``)."""
    rel = UNICODE_STREAM_FIXTURE[backend]
    events = sse_payloads(read_fixture(rel))
    if backend == "anthropic":
        expected = "".join(
            e["delta"]["text"] for e in events if e["type"] == "content_block_delta" and e["delta"]["type"] == "text_delta"
        )
    else:
        expected = "".join(ch["delta"].get("content") or "" for e in events for ch in e.get("choices", []))
    assert any(ord(ch) > 0xFFFF for ch in expected)  # the fixture does hold 4-byte characters
    group = BACKENDS[backend][0]
    with sdk.messages.stream(
        model=f"{group}/fixture/{rel}", max_tokens=256, messages=[{"role": "user", "content": "unicode"}]
    ) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == expected
    assert final.content[0].text == expected
    assert final.stop_reason == "end_turn"


def test_unicode_reply_stream_equals_plain(sdk: anthropic.Anthropic, backend: str):
    model, _ = model_for(backend, "-unicode")
    plain = sdk.messages.create(model=model, max_tokens=256, messages=MESSAGES)
    with sdk.messages.stream(model=model, max_tokens=256, messages=MESSAGES) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert any(ord(ch) > 0x7F for ch in plain.content[0].text)
    assert text == plain.content[0].text
    assert final.usage.output_tokens == plain.usage.output_tokens == tokens(text)
