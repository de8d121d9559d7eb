"""The official ``openai`` Python SDK against Tollgate and against the upstream directly.

Issue 2 acceptance: through Tollgate the SDK's chat, streams (with and without include_usage),
streamed tool calls, unicode split across reads, mid-stream error, embeddings, ``/v1/models``,
401 / 404 / 400 errors and retries behave exactly as they do against the upstream directly,
content byte-for-byte. Behaviour tests take the ``target`` fixture (``direct`` and ``gateway``)
and assert the same expected values for both; expected values follow from the input by the
mock's documented rules (crates/tollgate-mock/README.md) or from the shared fixture files.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import openai
import pytest

from conftest import MASTER_KEY, NAMED_GROUPS, UPSTREAM_KEY, Target
from mock_rules import (
    MOCK_CHUNKS,
    MOCK_CREATED,
    mock_pieces,
    mock_reply,
    mock_usage,
    read_fixture,
    sse_payloads,
    tokens,
    unique,
    usage_of,
)

CHAT_ID = re.compile(r"^chatcmpl-mock-\d+$")
CALL_ID = re.compile(r"^call_mock_\d+_\d+$")


MESSAGES = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Say hello to the Tollgate client suite, in one line please."},
]
REPLY = mock_reply(MESSAGES[-1]["content"])
USAGE = mock_usage(MESSAGES, REPLY)

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer"},
            },
            "required": ["city", "unit"],
        },
    },
}
# The mock builds arguments from the schema: string -> "mock-<name>", enum -> first value, integer -> 42.
WEATHER_ARGS = {"city": "mock-city", "unit": "celsius", "days": 42}


def collect_stream(stream) -> tuple[list[Any], list[str]]:
    """All chunks, and the content deltas in order (non-empty ones)."""
    chunks, pieces = [], []
    for chunk in stream:
        chunks.append(chunk)
        for choice in chunk.choices:
            if choice.delta.content:
                pieces.append(choice.delta.content)
    return chunks, pieces


def accumulate_tool_calls(chunks: list[Any]) -> dict[int, dict[str, str]]:
    """OpenAI's documented way: merge ``tool_calls[]`` deltas by ``index``."""
    calls: dict[int, dict[str, str]] = {}
    for chunk in chunks:
        for choice in chunk.choices:
            for tc in choice.delta.tool_calls or []:
                call = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": "", "fragments": 0})
                if tc.id:
                    call["id"] = tc.id
                if tc.function and tc.function.name:
                    call["name"] += tc.function.name
                if tc.function and tc.function.arguments:
                    call["arguments"] += tc.function.arguments
                    call["fragments"] += 1
    return calls


# ---------------------------------------------------------------- chat


def test_chat(target: Target):
    model = "mock-gpt"
    r = target.client().chat.completions.create(model=model, messages=MESSAGES)
    assert CHAT_ID.match(r.id), r.id
    assert r.object == "chat.completion"
    assert r.created == MOCK_CREATED
    assert r.model == model
    assert r.system_fingerprint == "fp_mock01"
    assert len(r.choices) == 1
    choice = r.choices[0]
    assert choice.index == 0
    assert choice.finish_reason == "stop"
    assert choice.message.role == "assistant"
    assert choice.message.content == REPLY
    assert choice.message.tool_calls is None
    assert usage_of(r.usage) == USAGE
    assert r.usage.prompt_tokens_details.cached_tokens == 0


def test_chat_unknown_field_and_defaults(target: Target, mock):
    """A field the SDK does not know (extra_body) reaches the upstream unchanged."""
    model = unique("mock-extra")
    extra = {"vendor_knob": {"depth": 3, "mode": "fast"}}
    r = target.client().chat.completions.create(model=model, messages=MESSAGES, extra_body=extra, max_tokens=5)
    # max_tokens truncates the reply to 5 tokens = 20 bytes and reports finish "length".
    assert r.choices[0].message.content == REPLY.encode()[:20].decode()
    assert r.choices[0].finish_reason == "length"
    seen = mock.observations(model)
    assert len(seen) == 1
    assert seen[0]["body"]["vendor_knob"] == extra["vendor_knob"]
    assert seen[0]["body"]["max_tokens"] == 5
    assert seen[0]["headers"]["authorization"] == f"Bearer {UPSTREAM_KEY}"


# ---------------------------------------------------------------- streams


def test_stream_without_include_usage(target: Target, direct_target: Target):
    model = "mock-gpt"
    chunks, pieces = collect_stream(
        target.client().chat.completions.create(model=model, messages=MESSAGES, stream=True)
    )
    assert pieces == mock_pieces(REPLY)
    assert "".join(pieces) == REPLY
    # Role chunk, 8 content chunks, finish chunk; no usage chunk, no usage anywhere.
    assert len(chunks) == MOCK_CHUNKS + 2
    assert all(c.usage is None for c in chunks)
    assert all(len(c.choices) == 1 for c in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert [c.choices[0].finish_reason for c in chunks] == [None] * (MOCK_CHUNKS + 1) + ["stop"]
    assert len({c.id for c in chunks}) == 1 and CHAT_ID.match(chunks[0].id)
    assert all(c.object == "chat.completion.chunk" and c.model == model for c in chunks)
    # Chunk for chunk what the SDK sees directly.
    ref_chunks, ref_pieces = collect_stream(
        direct_target.client().chat.completions.create(model=model, messages=MESSAGES, stream=True)
    )
    assert pieces == ref_pieces
    strip = lambda cs: [c.model_dump(exclude={"id"}) for c in cs]  # noqa: E731
    assert strip(chunks) == strip(ref_chunks)


def test_stream_with_include_usage(target: Target):
    model = "mock-gpt"
    chunks, pieces = collect_stream(
        target.client().chat.completions.create(
            model=model, messages=MESSAGES, stream=True, stream_options={"include_usage": True}
        )
    )
    assert "".join(pieces) == REPLY
    assert pieces == mock_pieces(REPLY)
    # Exactly one usage chunk, last, with no choices; it equals the mock's count.
    *body, last = chunks
    assert last.choices == []
    assert usage_of(last.usage) == USAGE
    assert all(c.usage is None and len(c.choices) == 1 for c in body)
    assert body[-1].choices[0].finish_reason == "stop"
    # Same usage as the non-streamed call.
    r = target.client().chat.completions.create(model=model, messages=MESSAGES)
    assert usage_of(r.usage) == usage_of(last.usage)


@pytest.mark.parametrize("include_usage", [False, True])
def test_stream_raw_bytes_equal(include_usage: bool, direct_target: Target, gateway_target: Target, http):
    """The SSE body through Tollgate is byte-for-byte the upstream's (ids aside, they count requests)."""
    body: dict[str, Any] = {"model": "mock-gpt", "messages": MESSAGES, "stream": True}
    if include_usage:
        body["stream_options"] = {"include_usage": True}
    raws = []
    for t in (direct_target, gateway_target):
        with http.stream(
            "POST", f"{t.base_url}/chat/completions", json=body, headers={"authorization": f"Bearer {t.api_key}"}
        ) as r:
            assert r.status_code == 200
            assert r.headers["content-type"].startswith("text/event-stream")
            raws.append(re.sub(rb"chatcmpl-mock-\d+", b"ID", r.read()))
    assert raws[0].endswith(b"data: [DONE]\n\n")
    assert (b'"usage":{' in raws[0]) == include_usage
    assert raws[1] == raws[0]


# ---------------------------------------------------------------- tool calls


def test_streamed_tool_calls_generated(target: Target):
    """Arguments streamed in fragments cut mid-token re-assemble into the non-streamed call."""
    client = target.client()
    model = "mock-gpt-tools"
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    whole = client.chat.completions.create(model=model, messages=messages, tools=[WEATHER_TOOL])
    assert whole.choices[0].finish_reason == "tool_calls"
    assert whole.choices[0].message.content is None
    (call,) = whole.choices[0].message.tool_calls
    assert CALL_ID.match(call.id)
    assert call.type == "function"
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == WEATHER_ARGS
    expected_usage = {
        "prompt_tokens": tokens(messages[0]["content"]) + 3,
        "completion_tokens": tokens("get_weather" + call.function.arguments),
    }
    expected_usage["total_tokens"] = sum(expected_usage.values())
    assert usage_of(whole.usage) == expected_usage

    chunks = list(
        client.chat.completions.create(
            model=model, messages=messages, tools=[WEATHER_TOOL], stream=True, stream_options={"include_usage": True}
        )
    )
    calls = accumulate_tool_calls(chunks)
    assert list(calls) == [0]
    assert CALL_ID.match(calls[0]["id"])
    assert calls[0]["name"] == "get_weather"
    assert calls[0]["fragments"] > 1
    assert calls[0]["arguments"] == call.function.arguments  # byte-for-byte
    assert json.loads(calls[0]["arguments"]) == WEATHER_ARGS
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
    assert chunks[-1].choices == [] and usage_of(chunks[-1].usage) == expected_usage


def _fixture_tool_calls(rel: str) -> tuple[dict[int, dict[str, str]], dict[str, int]]:
    calls: dict[int, dict[str, str]] = {}
    usage = None
    for ev in sse_payloads(read_fixture(rel)):
        for choice in ev["choices"]:
            for tc in choice["delta"].get("tool_calls") or []:
                call = calls.setdefault(tc["index"], {"id": "", "name": "", "arguments": ""})
                call["id"] = tc.get("id") or call["id"]
                call["name"] += tc.get("function", {}).get("name") or ""
                call["arguments"] += tc.get("function", {}).get("arguments") or ""
        if ev.get("usage"):
            usage = {k: ev["usage"][k] for k in ("prompt_tokens", "completion_tokens", "total_tokens")}
    return calls, usage


def test_streamed_tool_calls_fixture(target: Target):
    """tools.stream.sse: two parallel calls, arguments split mid-key/mid-value, usage chunk."""
    client = target.client()
    exp_calls, exp_usage = _fixture_tool_calls("openai/chat/tools.stream.sse")
    assert len(exp_calls) == 2  # the fixture is what we think it is
    chunks = list(
        client.chat.completions.create(
            model="fixture/openai/chat/tools.stream.sse",
            messages=[{"role": "user", "content": "Weather and time in Paris?"}],
            tools=[WEATHER_TOOL],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    calls = accumulate_tool_calls(chunks)
    assert {i: {k: c[k] for k in ("id", "name", "arguments")} for i, c in calls.items()} == exp_calls
    assert all(c["fragments"] > 1 for c in calls.values())
    assert json.loads(calls[0]["arguments"]) == {"city": "Paris", "unit": "celsius"}
    assert json.loads(calls[1]["arguments"]) == {"timezone": "Europe/Paris"}
    assert chunks[-1].choices == [] and usage_of(chunks[-1].usage) == exp_usage
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"

    # The non-streamed form of the same reply carries the same calls.
    whole = client.chat.completions.create(
        model="fixture/openai/chat/tools.response.json",
        messages=[{"role": "user", "content": "Weather and time in Paris?"}],
        tools=[WEATHER_TOOL],
    )
    got = [(tc.id, tc.function.name, json.loads(tc.function.arguments)) for tc in whole.choices[0].message.tool_calls]
    assert got == [(calls[i]["id"], calls[i]["name"], json.loads(calls[i]["arguments"])) for i in (0, 1)]


# ---------------------------------------------------------------- unicode


UNICODE_TEXT = json.loads(read_fixture("openai/chat/unicode.response.json"))["choices"][0]["message"]["content"]


def test_unicode_split_across_reads_fixture(target: Target):
    """unicode.stream.sse is flushed at offsets inside multi-byte characters and inside `data:`."""
    expected_deltas = [
        ev["choices"][0]["delta"]["content"]
        for ev in sse_payloads(read_fixture("openai/chat/unicode.stream.sse"))
        if ev["choices"] and ev["choices"][0]["delta"].get("content")
    ]
    assert "".join(expected_deltas) == UNICODE_TEXT
    _, pieces = collect_stream(
        target.client().chat.completions.create(
            model="fixture/openai/chat/unicode.stream.sse",
            messages=[{"role": "user", "content": "unicode please"}],
            stream=True,
        )
    )
    assert pieces == expected_deltas
    assert "".join(pieces) == UNICODE_TEXT
    assert "".join(pieces).encode("utf-8") == UNICODE_TEXT.encode("utf-8")


def test_unicode_split_every_few_bytes(target: Target, mock):
    """A generated unicode stream written in 5-byte pieces equals the non-streamed text."""
    model = unique("split", "-unicode")
    mock.script(model, [], default={"split_every": 5, "split_delay_ms": 0})
    client = target.client()
    messages = [{"role": "user", "content": "unicode please"}]
    whole = client.chat.completions.create(model=model, messages=messages).choices[0].message.content
    assert any(ord(ch) > 0xFFFF for ch in whole)  # emoji: 4-byte UTF-8, surely cut by 5-byte writes
    _, pieces = collect_stream(client.chat.completions.create(model=model, messages=messages, stream=True))
    assert "".join(pieces) == whole
    assert pieces == mock_pieces(whole)


# ---------------------------------------------------------------- mid-stream error


def test_midstream_error_fixture(target: Target):
    events = sse_payloads(read_fixture("openai/chat/midstream_error.stream.sse"))
    expected_error = events[-1]["error"]
    expected_text = "".join(e["choices"][0]["delta"].get("content") or "" for e in events[:-1])
    stream = target.client().chat.completions.create(
        model="fixture/openai/chat/midstream_error.stream.sse",
        messages=[{"role": "user", "content": "fail halfway"}],
        stream=True,
    )
    pieces = []
    with pytest.raises(openai.APIError) as info:
        for chunk in stream:
            pieces.append(chunk.choices[0].delta.content or "")
    assert "".join(pieces) == expected_text == "Partial answer before"
    assert not isinstance(info.value, openai.APIStatusError)  # an error event, not an HTTP status
    assert info.value.message == expected_error["message"]
    assert info.value.body == expected_error
    assert info.value.type == "server_error"


def test_midstream_error_model(target: Target, direct_target: Target):
    messages = [{"role": "user", "content": "hello midstream"}]
    reply = mock_reply(messages[0]["content"])

    def run(t: Target):
        pieces, finishes = [], []
        stream = t.client().chat.completions.create(model="mock-gpt-midstream-error", messages=messages, stream=True)
        with pytest.raises(openai.APIError) as info:
            for chunk in stream:
                pieces.append(chunk.choices[0].delta.content or "")
                finishes.append(chunk.choices[0].finish_reason)
        return [p for p in pieces if p], finishes, info.value

    pieces, finishes, err = run(target)
    # Three content chunks of the reply, no finish, then the error.
    assert pieces == mock_pieces(reply)[:3]
    assert finishes == [None] * len(finishes)
    assert isinstance(err.body, dict) and err.body["message"] == err.message and err.message
    ref_pieces, _, ref_err = run(direct_target)
    assert pieces == ref_pieces
    assert err.body == ref_err.body


# ---------------------------------------------------------------- embeddings


EMBED_INPUT = ["alpha", "beta gamma", "naïve café 🚀"]


def test_embeddings_default_and_float(target: Target, direct_target: Target):
    client = target.client()
    default = client.embeddings.create(model="mock-embedding", input=EMBED_INPUT)  # SDK asks for base64
    floats = client.embeddings.create(model="mock-embedding", input=EMBED_INPUT, encoding_format="float")
    reference = direct_target.client().embeddings.create(
        model="mock-embedding", input=EMBED_INPUT, encoding_format="float"
    )
    vectors = [d.embedding for d in floats.data]
    assert [d.index for d in floats.data] == [0, 1, 2]
    assert all(len(v) == 8 and all(-1.0 <= x < 1.0 for x in v) for v in vectors)
    assert len({tuple(v) for v in vectors}) == 3  # inputs differ, vectors differ
    assert [d.embedding for d in default.data] == vectors  # base64 decodes to the same float32s
    assert [d.embedding for d in reference.data] == vectors  # same as the upstream directly
    expected_prompt = sum(tokens(s) for s in EMBED_INPUT)
    for r in (default, floats):
        assert r.object == "list" and r.model == "mock-embedding"
        assert r.usage.prompt_tokens == expected_prompt == r.usage.total_tokens
    short = client.embeddings.create(model="mock-embedding", input="alpha", dimensions=4)
    assert len(short.data[0].embedding) == 4


def test_embeddings_base64_fixture(target: Target):
    """The SDK decodes response_base64.json to exactly response.json's floats."""
    client = target.client()
    expected = [d["embedding"] for d in json.loads(read_fixture("openai/embeddings/response.json"))["data"]]
    inputs = json.loads(read_fixture("openai/embeddings/request.json"))["input"]
    b64 = client.embeddings.create(model="fixture/openai/embeddings/response_base64.json", input=inputs)
    flt = client.embeddings.create(
        model="fixture/openai/embeddings/response.json", input=inputs, encoding_format="float"
    )
    assert [d.embedding for d in b64.data] == expected
    assert [d.embedding for d in flt.data] == expected
    assert b64.usage.prompt_tokens == flt.usage.prompt_tokens == 5


# ---------------------------------------------------------------- models


def test_models_list_direct(direct_target: Target):
    expected = [m["id"] for m in json.loads(read_fixture("openai/models/list.json"))["data"]]
    assert [m.id for m in direct_target.client().models.list()] == expected


def test_models_list_gateway(named_target: Target):
    models = list(named_target.client().models.list())
    ids = [m.id for m in models]
    assert sorted(ids) == sorted(NAMED_GROUPS)
    assert len(ids) == len(set(ids))  # a group with two deployments is listed once
    assert all(m.object == "model" for m in models)


def test_models_list_wildcard_only_gateway(gateway_target: Target):
    """A gateway whose only group is the `*` wildcard has no concrete group to list."""
    assert [m.id for m in gateway_target.client().models.list()] == []


def test_named_group_routes_to_its_deployment(named_target: Target, mock):
    r = named_target.client().chat.completions.create(model="team-chat", messages=MESSAGES)
    assert r.choices[0].message.content == REPLY
    assert usage_of(r.usage) == USAGE
    seen = [o for o in mock.observations("mock-team")]
    assert seen and seen[-1]["body"]["model"] == "mock-team"


# ---------------------------------------------------------------- errors


def test_bad_key(target: Target, mock):
    """Gateway: wrong master key. Direct: wrong upstream key (the mock requires one). Same SDK error."""
    model = unique("mock-badkey")
    bad = "sk-definitely-wrong-0000"
    client = openai.OpenAI(base_url=target.base_url, api_key=bad, max_retries=0, timeout=10)
    with pytest.raises(openai.AuthenticationError) as info:
        client.chat.completions.create(model=model, messages=MESSAGES)
    client.close()
    err = info.value
    assert err.status_code == 401
    if target.name == "gateway":
        # LiteLLM's refusal of a virtual key it has no row for: it names the key's hash
        assert err.body["type"] == "token_not_found_in_db" and err.code == "401"
        assert err.body["param"] == "key"
        assert f"key={hashlib.sha256(bad.encode()).hexdigest()}, not found in db" in err.message
    else:
        assert err.body["type"] == "invalid_request_error" and err.code == "invalid_api_key"
    assert bad not in err.message and bad not in err.response.text
    assert MASTER_KEY not in err.response.text and UPSTREAM_KEY not in err.response.text
    if target.name == "gateway":
        assert mock.observations(model) == []  # rejected before any upstream call


@pytest.mark.parametrize("header", ["x-api-key", "api-key", "x-litellm-api-key"])
def test_gateway_key_headers(header: str, gateway_target: Target, http):
    body = {"model": "mock-gpt", "messages": MESSAGES}
    ok = http.post(f"{gateway_target.base_url}/chat/completions", json=body, headers={header: MASTER_KEY})
    assert ok.status_code == 200 and ok.json()["choices"][0]["message"]["content"] == REPLY
    bad = http.post(f"{gateway_target.base_url}/chat/completions", json=body, headers={header: "sk-nope"})
    assert bad.status_code == 401 and bad.json()["error"]["type"] == "token_not_found_in_db"


def test_unknown_model_gateway(named_target: Target):
    with pytest.raises(openai.NotFoundError) as info:
        named_target.client().chat.completions.create(model="no-such-model", messages=MESSAGES)
    err = info.value
    assert err.status_code == 404
    assert err.code == "model_not_found"
    assert "no-such-model" in err.message
    assert any(g in err.message for g in NAMED_GROUPS)  # lists what the caller may use


def test_unknown_model_direct(direct_target: Target):
    """The upstream's own 404 for an unknown model, the shape the gateway imitates."""
    with pytest.raises(openai.NotFoundError) as info:
        direct_target.client().chat.completions.create(model="mock-status-404", messages=MESSAGES)
    assert info.value.code == "model_not_found"


def test_malformed_json(target: Target, http):
    r = http.post(
        f"{target.base_url}/chat/completions",
        content=b'{"model": "mock-gpt", "messages": [',
        headers={"authorization": f"Bearer {target.api_key}", "content-type": "application/json"},
    )
    assert r.status_code == 400
    err = r.json()["error"]
    assert err["type"] == "invalid_request_error"
    assert err["message"].startswith("We could not parse the JSON body of your request")
    assert set(err) == {"message", "type", "param", "code"}


@pytest.mark.parametrize("missing", ["model", "messages"])
def test_missing_required_field_gateway(missing: str, gateway_target: Target, http):
    body = {"model": "mock-gpt", "messages": MESSAGES}
    del body[missing]
    r = http.post(
        f"{gateway_target.base_url}/chat/completions", json=body, headers={"authorization": f"Bearer {MASTER_KEY}"}
    )
    assert r.status_code == 400
    err = r.json()["error"]
    assert err["type"] == "invalid_request_error"
    assert missing in err["message"]


UPSTREAM_STATUSES = [
    (400, openai.BadRequestError),
    (401, openai.AuthenticationError),
    (403, openai.PermissionDeniedError),
    (404, openai.NotFoundError),
    (409, openai.ConflictError),
    (422, openai.UnprocessableEntityError),
    (429, openai.RateLimitError),
    (500, openai.InternalServerError),
    (503, openai.InternalServerError),
]


@pytest.mark.parametrize("status,exc", UPSTREAM_STATUSES, ids=[str(s) for s, _ in UPSTREAM_STATUSES])
def test_upstream_status_raises_sdk_class(status: int, exc: type, target: Target, mock, http):
    model = f"mock-status-{status}"
    # The upstream's own error body, fetched raw from the mock.
    raw = http.post(
        f"{mock.url}/v1/chat/completions",
        json={"model": model, "messages": MESSAGES},
        headers={"authorization": f"Bearer {UPSTREAM_KEY}"},
    )
    assert raw.status_code == status
    upstream_error = raw.json()["error"]
    with pytest.raises(exc) as info:
        target.client().chat.completions.create(model=model, messages=MESSAGES)
    err = info.value
    assert type(err) is exc
    assert err.status_code == status
    assert err.body == upstream_error
    assert upstream_error["message"] in err.message
    # Rate-limit and retry headers reach the SDK unprefixed, as OpenAI sends them.
    relayed = {k: v for k, v in raw.headers.items() if k.startswith(("x-ratelimit-", "retry-after"))}
    if status == 429:
        assert any(k.startswith("x-ratelimit-") for k in relayed)
    assert {k: err.response.headers.get(k) for k in relayed} == relayed


# ---------------------------------------------------------------- retries


def test_sdk_retries_429_then_503(target: Target, mock):
    """The SDK retries 429 (honouring retry-after-ms) and 503; Tollgate adds no retries of its own."""
    model = unique("mock-retry")
    mock.script(model, [{"status": 429, "retry_after_ms": 10}, {"status": 503}, {"status": 200}])
    r = target.client(max_retries=2).chat.completions.create(model=model, messages=MESSAGES)
    assert r.choices[0].message.content == REPLY
    assert usage_of(r.usage) == USAGE
    seen = mock.observations(model)
    assert [o["status"] for o in seen] == [429, 503, 200]


def test_sdk_no_retries_raises_rate_limit(target: Target, mock):
    model = unique("mock-retry")
    mock.script(model, [{"status": 429, "retry_after_ms": 10}, {"status": 200}])
    with pytest.raises(openai.RateLimitError) as info:
        target.client(max_retries=0).chat.completions.create(model=model, messages=MESSAGES)
    err = info.value
    assert err.status_code == 429
    assert err.code == "rate_limit_exceeded"
    assert err.response.headers.get("retry-after-ms") == "10"  # forwarded so the SDK can honour it
    assert [o["status"] for o in mock.observations(model)] == [429]


def test_models_retrieve_gateway(named_target: Target):
    client = named_target.client()
    m = client.models.retrieve("team-chat")
    assert m.id == "team-chat" and m.object == "model"
    with pytest.raises(openai.NotFoundError) as info:
        client.models.retrieve("no-such-model")
    assert info.value.status_code == 404
    assert "no-such-model" in info.value.message


def test_models_retrieve_direct(direct_target: Target):
    m = direct_target.client().models.retrieve("mock-gpt-tools")
    assert m.id == "mock-gpt-tools" and m.object == "model" and m.created == MOCK_CREATED
