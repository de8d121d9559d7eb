"""The official ``openai`` SDK on translated routes (issue 4 §6).

* Chat Completions against an Anthropic-backed model (``claude/<m>``, an ``anthropic/``
  deployment): the gateway translates chat → Messages and back, streamed and not.
* The Responses API (``client.responses.create``) against ``oai/<m>`` (``openai/``: passthrough),
  ``gpt/<m>`` (``hosted_vllm/``: translated onto Chat Completions) and ``claude/<m>`` (translated
  onto Messages), streamed and not, with function calls and ``previous_response_id``.

Expected values follow from the input by the mock's documented rules
(crates/tollgate-mock/README.md, ``mock_rules``) or come from the shared fixture files; every
backend must give the SDK the same content, tool calls, stop reasons and usage.
"""

from __future__ import annotations

import json
import re
from typing import Any

import openai
import pytest

from conftest import CLIENT_TIMEOUT_S, MASTER_KEY, Gateway, Mock
from mock_rules import mock_pieces, mock_reply, mock_usage, read_fixture, sse_payloads, tokens, unique, usage_of

MESSAGES = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Say hello to the Tollgate client suite, in one line please."},
]
REPLY = mock_reply(MESSAGES[-1]["content"])
USAGE = mock_usage(MESSAGES, REPLY)

WEATHER_PARAMS = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer"},
    },
    "required": ["city", "unit"],
}
# The mock builds arguments from the schema: string -> "mock-<name>", enum -> first value, integer -> 42.
WEATHER_ARGS = {"city": "mock-city", "unit": "celsius", "days": 42}
# Completion tokens of a tool call: tokens(name + arguments), arguments as the mock serializes them.
WEATHER_CALL_TOKENS = tokens("get_weather" + json.dumps(WEATHER_ARGS, separators=(",", ":")))

ANTHROPIC_TOOLS_RESPONSE = "anthropic/messages/tools.response.json"
ANTHROPIC_TOOLS_STREAM = "anthropic/messages/tools.stream.sse"


@pytest.fixture(scope="module")
def oa(dialects_gateway: Gateway):
    c = openai.OpenAI(
        base_url=f"{dialects_gateway.url}/v1", api_key=MASTER_KEY, max_retries=0, timeout=CLIENT_TIMEOUT_S
    )
    yield c
    c.close()


def anthropic_fixture_calls() -> tuple[str, list[dict[str, Any]], dict[str, int]]:
    """Text, tool calls (``id``, ``name``, parsed ``arguments``) and usage of the Anthropic tools fixture."""
    body = json.loads(read_fixture(ANTHROPIC_TOOLS_RESPONSE))
    text = "".join(b["text"] for b in body["content"] if b["type"] == "text")
    calls = [
        {"id": b["id"], "name": b["name"], "arguments": b["input"]} for b in body["content"] if b["type"] == "tool_use"
    ]
    return text, calls, body["usage"]


# =============================================================================================
# openai SDK, Chat Completions, Anthropic-backed model


def test_chat_on_anthropic_plain(oa: openai.OpenAI, mock: Mock):
    upstream = unique("mock-claude")
    r = oa.chat.completions.create(model=f"claude/{upstream}", messages=MESSAGES)
    assert r.object == "chat.completion"
    assert len(r.choices) == 1
    assert r.choices[0].message.role == "assistant"
    assert r.choices[0].message.content == REPLY
    assert r.choices[0].message.tool_calls is None
    assert r.choices[0].finish_reason == "stop"
    assert usage_of(r.usage) == USAGE
    # Sent as Anthropic Messages: system lifted to the top level, max_tokens defaulted.
    (obs,) = mock.observations(upstream)
    assert obs["route"] == "/messages"
    assert obs["body"]["system"] in (MESSAGES[0]["content"], [{"type": "text", "text": MESSAGES[0]["content"]}])
    assert obs["body"]["messages"] == [{"role": "user", "content": MESSAGES[1]["content"]}] or obs["body"][
        "messages"
    ] == [{"role": "user", "content": [{"type": "text", "text": MESSAGES[1]["content"]}]}]
    assert isinstance(obs["body"]["max_tokens"], int) and obs["body"]["max_tokens"] > 0


def test_chat_on_anthropic_streamed(oa: openai.OpenAI):
    stream = oa.chat.completions.create(
        model=f"claude/{unique('mock-claude')}",
        messages=MESSAGES,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    pieces = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert pieces == mock_pieces(REPLY)
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes == ["stop"]
    assert chunks[-1].choices == []
    assert usage_of(chunks[-1].usage) == USAGE
    assert len({c.id for c in chunks}) == 1


def test_chat_on_anthropic_cache_usage(oa: openai.OpenAI, mock: Mock):
    """prompt_tokens = input + cache read + cache write; cached_tokens = cache read (wire-formats §7.3)."""
    upstream = unique("mock-claude")
    inp, out, cache_read, cache_write = 100, 7, 30, 20
    mock.script(upstream, [{"usage": [inp, out, cache_read, cache_write]}] * 2)
    r = oa.chat.completions.create(model=f"claude/{upstream}", messages=MESSAGES)
    expected = {"prompt_tokens": inp + cache_read + cache_write, "completion_tokens": out,
                "total_tokens": inp + cache_read + cache_write + out}
    assert usage_of(r.usage) == expected
    assert r.usage.prompt_tokens_details.cached_tokens == cache_read

    chunks = list(
        oa.chat.completions.create(
            model=f"claude/{upstream}", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
        )
    )
    assert usage_of(chunks[-1].usage) == expected
    assert chunks[-1].usage.prompt_tokens_details.cached_tokens == cache_read


def test_chat_on_anthropic_tool_calls_from_fixture(oa: openai.OpenAI):
    text, calls, usage = anthropic_fixture_calls()
    r = oa.chat.completions.create(
        model=f"claude/fixture/{ANTHROPIC_TOOLS_RESPONSE}",
        messages=[{"role": "user", "content": "weather and time in Paris?"}],
    )
    msg = r.choices[0].message
    assert msg.content == text
    got = [{"id": c.id, "name": c.function.name, "arguments": json.loads(c.function.arguments)} for c in msg.tool_calls]
    assert got == calls
    assert [c["id"] for c in calls] == ["toolu_mock_weather_01", "toolu_mock_time_02"]
    assert all(c.type == "function" for c in msg.tool_calls)
    assert r.choices[0].finish_reason == "tool_calls"
    prompt = usage["input_tokens"] + usage["cache_read_input_tokens"] + usage["cache_creation_input_tokens"]
    assert usage_of(r.usage) == {
        "prompt_tokens": prompt,
        "completion_tokens": usage["output_tokens"],
        "total_tokens": prompt + usage["output_tokens"],
    }


def test_chat_on_anthropic_tool_calls_streamed_from_fixture(oa: openai.OpenAI):
    text, calls, usage = anthropic_fixture_calls()
    chunks = list(
        oa.chat.completions.create(
            model=f"claude/fixture/{ANTHROPIC_TOOLS_STREAM}",
            messages=[{"role": "user", "content": "weather and time in Paris?"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    merged: dict[int, dict[str, Any]] = {}
    fragments = 0
    for c in chunks:
        for ch in c.choices:
            for tc in ch.delta.tool_calls or []:
                m = merged.setdefault(tc.index, {"id": None, "name": None, "arguments": ""})
                m["id"] = tc.id or m["id"]
                if tc.function:
                    m["name"] = tc.function.name or m["name"]
                    if tc.function.arguments:
                        m["arguments"] += tc.function.arguments
                        fragments += 1
    # Tool-call index counts tool calls from 0 (not the Anthropic block index 1, 2).
    assert sorted(merged) == [0, 1]
    got = [{**m, "arguments": json.loads(m["arguments"])} for _, m in sorted(merged.items())]
    assert content == text
    assert got == calls
    # Fragments are forwarded one chunk each as they arrive, not merged at the end.
    fixture_fragments = [
        e["delta"]["partial_json"]
        for e in sse_payloads(read_fixture(ANTHROPIC_TOOLS_STREAM))
        if e["type"] == "content_block_delta" and e["delta"]["type"] == "input_json_delta" and e["delta"]["partial_json"]
    ]
    assert fragments == len(fixture_fragments) == 9
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes == ["tool_calls"]
    prompt = usage["input_tokens"] + usage["cache_read_input_tokens"] + usage["cache_creation_input_tokens"]
    assert usage_of(chunks[-1].usage) == {
        "prompt_tokens": prompt,
        "completion_tokens": usage["output_tokens"],
        "total_tokens": prompt + usage["output_tokens"],
    }


def test_chat_on_anthropic_forced_tool(oa: openai.OpenAI, mock: Mock):
    upstream = unique("mock-claude")
    r = oa.chat.completions.create(
        model=f"claude/{upstream}",
        messages=MESSAGES,
        tools=[{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER_PARAMS}}],
        tool_choice="required",
    )
    (call,) = r.choices[0].message.tool_calls
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == WEATHER_ARGS
    assert re.fullmatch(r"toolu_mock_\d+_0", call.id)
    assert r.choices[0].finish_reason == "tool_calls"
    assert r.usage.completion_tokens == WEATHER_CALL_TOKENS
    (obs,) = mock.observations(upstream)
    assert obs["body"]["tool_choice"]["type"] == "any"
    assert obs["body"]["tools"][0]["input_schema"] == WEATHER_PARAMS


def test_chat_on_anthropic_overloaded(oa: openai.OpenAI):
    """Anthropic's 529 reaches an OpenAI client as 503 (the SDK's InternalServerError)."""
    with pytest.raises(openai.InternalServerError) as ei:
        oa.chat.completions.create(model="claude/mock-overloaded", messages=MESSAGES)
    assert ei.value.status_code == 503


# =============================================================================================
# openai SDK, Responses API, three backends

INSTRUCTIONS = "You are terse."
INPUT = "Say hello to the Tollgate client suite, in one line please."
R_REPLY = mock_reply(INPUT)
# Responses: each input item is a message, instructions one more (3 tokens of overhead each);
# chat and Messages count the translated system + user messages the same way.
R_INPUT_TOKENS = tokens(INSTRUCTIONS + INPUT) + 3 * 2
R_OUTPUT_TOKENS = tokens(R_REPLY)

# backend -> (gateway group, upstream route the mock must see)
R_BACKENDS = {
    "oai-passthrough": ("oai", "/responses"),
    "gpt-chat": ("gpt", "/chat/completions"),
    "claude-messages": ("claude", "/messages"),
}


@pytest.fixture(params=list(R_BACKENDS))
def rb(request) -> str:
    return request.param


def r_model(rb: str, suffix: str = "") -> tuple[str, str]:
    group, _ = R_BACKENDS[rb]
    upstream = unique("mock-model", suffix)
    return f"{group}/{upstream}", upstream


def test_responses_plain(oa: openai.OpenAI, mock: Mock, rb: str):
    model, upstream = r_model(rb)
    r = oa.responses.create(model=model, instructions=INSTRUCTIONS, input=INPUT)
    assert r.object == "response"
    assert r.status == "completed"
    assert r.output_text == R_REPLY
    assert [o.type for o in r.output] == ["message"]
    assert r.output[0].role == "assistant"
    assert r.usage.input_tokens == R_INPUT_TOKENS
    assert r.usage.output_tokens == R_OUTPUT_TOKENS
    assert r.usage.total_tokens == R_INPUT_TOKENS + R_OUTPUT_TOKENS
    (obs,) = mock.observations(upstream)
    assert obs["route"] == R_BACKENDS[rb][1]


def test_responses_streamed(oa: openai.OpenAI, rb: str):
    model, _ = r_model(rb)
    events = list(oa.responses.create(model=model, instructions=INSTRUCTIONS, input=INPUT, stream=True))
    types = [e.type for e in events]
    assert types[0] == "response.created"
    assert types[-1] == "response.completed"
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert "".join(deltas) == R_REPLY
    assert len(deltas) == 8  # the mock's 8 runs, forwarded as they come
    (done,) = [e for e in events if e.type == "response.output_text.done"]
    assert done.text == R_REPLY
    final = events[-1].response
    assert final.status == "completed"
    assert final.output_text == R_REPLY
    assert final.usage.input_tokens == R_INPUT_TOKENS
    assert final.usage.output_tokens == R_OUTPUT_TOKENS
    # sequence_number increases by one per event from 0.
    assert [e.sequence_number for e in events] == list(range(len(events)))


R_TOOL = {"type": "function", "name": "get_weather", "description": "Current weather.", "parameters": WEATHER_PARAMS}
R_CALL_ID = {"oai-passthrough": r"call_mock_\d+_0", "gpt-chat": r"call_mock_\d+_0", "claude-messages": r"toolu_mock_\d+_0"}


def test_responses_function_call(oa: openai.OpenAI, rb: str):
    model, _ = r_model(rb, "-tools")
    r = oa.responses.create(model=model, input=INPUT, tools=[R_TOOL])
    calls = [o for o in r.output if o.type == "function_call"]
    assert len(calls) == 1
    assert calls[0].name == "get_weather"
    assert json.loads(calls[0].arguments) == WEATHER_ARGS
    assert re.fullmatch(R_CALL_ID[rb], calls[0].call_id)
    assert r.status == "completed"
    assert r.usage.output_tokens == WEATHER_CALL_TOKENS


def test_responses_function_call_streamed(oa: openai.OpenAI, rb: str):
    model, _ = r_model(rb, "-tools")
    events = list(oa.responses.create(model=model, input=INPUT, tools=[R_TOOL], stream=True))
    assert events[-1].type == "response.completed"
    added = [e.item for e in events if e.type == "response.output_item.added" and e.item.type == "function_call"]
    assert [i.name for i in added] == ["get_weather"]
    fragments = [e.delta for e in events if e.type == "response.function_call_arguments.delta"]
    assert len(fragments) > 1
    assert json.loads("".join(fragments)) == WEATHER_ARGS
    (args_done,) = [e for e in events if e.type == "response.function_call_arguments.done"]
    assert json.loads(args_done.arguments) == WEATHER_ARGS
    (call,) = [o for o in events[-1].response.output if o.type == "function_call"]
    assert call.name == "get_weather"
    assert json.loads(call.arguments) == WEATHER_ARGS
    assert call.call_id == added[0].call_id
    assert re.fullmatch(R_CALL_ID[rb], call.call_id)
    assert events[-1].response.usage.output_tokens == WEATHER_CALL_TOKENS


# Tool fixtures per backend, each replayed by the mock in its own dialect: the SDK must get the same
# two function calls (call ids kept) from all three.
R_TOOL_FIXTURES = {
    "oai-passthrough": ("openai/responses/tools.stream.sse", "openai/responses/tools.response.json"),
    "gpt-chat": ("openai/chat/tools.stream.sse", "openai/chat/tools.response.json"),
    "claude-messages": (ANTHROPIC_TOOLS_STREAM, ANTHROPIC_TOOLS_RESPONSE),
}


def fixture_calls(rb: str) -> list[dict[str, Any]]:
    body = json.loads(read_fixture(R_TOOL_FIXTURES[rb][1]))
    if rb == "oai-passthrough":
        items = [o for o in body["output"] if o["type"] == "function_call"]
        return [{"call_id": o["call_id"], "name": o["name"], "arguments": json.loads(o["arguments"])} for o in items]
    if rb == "gpt-chat":
        tcs = body["choices"][0]["message"]["tool_calls"]
        return [
            {"call_id": t["id"], "name": t["function"]["name"], "arguments": json.loads(t["function"]["arguments"])}
            for t in tcs
        ]
    return [{"call_id": c["id"], "name": c["name"], "arguments": c["arguments"]} for c in anthropic_fixture_calls()[1]]


def test_responses_function_calls_streamed_from_fixture(oa: openai.OpenAI, rb: str):
    expected = fixture_calls(rb)
    assert [c["name"] for c in expected] == ["get_weather", "get_time"]
    group = R_BACKENDS[rb][0]
    events = list(
        oa.responses.create(
            model=f"{group}/fixture/{R_TOOL_FIXTURES[rb][0]}", input="weather and time in Paris?", tools=[R_TOOL], stream=True
        )
    )
    assert events[-1].type == "response.completed"
    by_index: dict[int, str] = {}
    for e in events:
        if e.type == "response.function_call_arguments.delta":
            by_index[e.output_index] = by_index.get(e.output_index, "") + e.delta
    calls = [o for o in events[-1].response.output if o.type == "function_call"]
    got = [{"call_id": c.call_id, "name": c.name, "arguments": json.loads(c.arguments)} for c in calls]
    assert got == expected
    # The streamed fragments join to the same complete arguments, per output item.
    call_indexes = [i for i, o in enumerate(events[-1].response.output) if o.type == "function_call"]
    assert [json.loads(by_index[i]) for i in call_indexes] == [c["arguments"] for c in expected]


@pytest.mark.parametrize("rb_name", ["gpt-chat", "claude-messages"])
def test_responses_previous_response_id(oa: openai.OpenAI, mock: Mock, rb_name: str):
    """A follow-up with ``previous_response_id`` sends the earlier turn upstream (translated routes)."""
    model, upstream = r_model(rb_name)
    first = oa.responses.create(model=model, input="Say hi")
    assert first.output_text == mock_reply("Say hi")
    second = oa.responses.create(model=model, input="And again?", previous_response_id=first.id)
    assert second.output_text == mock_reply("And again?")
    assert second.previous_response_id == first.id
    seen = mock.observations(upstream)
    assert len(seen) == 2

    def text_of(m: dict[str, Any]) -> str:
        c = m["content"]
        return c if isinstance(c, str) else "".join(p.get("text", "") for p in c)

    history = [(m["role"], text_of(m)) for m in seen[1]["body"]["messages"]]
    assert history == [("user", "Say hi"), ("assistant", mock_reply("Say hi")), ("user", "And again?")]
    # 3 messages upstream: the usage the client sees counts all of them.
    assert second.usage.input_tokens == tokens("Say hi" + mock_reply("Say hi") + "And again?") + 3 * 3


# tool_choice keeps its meaning and takes the shape each upstream API requires
# (issue 4 acceptance: "none" stays "none"). Per choice: (Responses value, chat value, Messages value).
TOOL_CHOICES = {
    "none": ("none", "none", {"type": "none"}),
    "auto": ("auto", "auto", {"type": "auto"}),
    "required": ("required", "required", {"type": "any"}),
    "named": (
        {"type": "function", "name": "get_weather"},
        {"type": "function", "function": {"name": "get_weather"}},
        {"type": "tool", "name": "get_weather"},
    ),
}


@pytest.mark.parametrize("choice", list(TOOL_CHOICES))
def test_responses_tool_choice_shapes(oa: openai.OpenAI, mock: Mock, rb: str, choice: str):
    model, upstream = r_model(rb)
    responses_value, chat_value, messages_value = TOOL_CHOICES[choice]
    r = oa.responses.create(model=model, input=INPUT, tools=[R_TOOL], tool_choice=responses_value)
    (obs,) = mock.observations(upstream)
    sent = obs["body"]["tool_choice"]
    expected = {"oai-passthrough": responses_value, "gpt-chat": chat_value, "claude-messages": messages_value}[rb]
    if rb == "claude-messages" and isinstance(sent, dict):
        sent = {k: v for k, v in sent.items() if k != "disable_parallel_tool_use"}
    assert sent == expected
    calls = [o for o in r.output if o.type == "function_call"]
    if choice in ("required", "named"):
        # The mock calls the tool when the choice forces one.
        assert [(c.name, json.loads(c.arguments)) for c in calls] == [("get_weather", WEATHER_ARGS)]
    else:
        assert calls == []
        assert r.output_text == R_REPLY


@pytest.mark.parametrize("rb_name", ["gpt-chat", "claude-messages"])
def test_responses_function_call_output_round_trip(oa: openai.OpenAI, mock: Mock, rb_name: str):
    """A function call and its output in ``input`` reach the upstream as that API's tool call and result."""
    model, upstream = r_model(rb_name)
    args = json.dumps({"city": "Paris", "unit": "celsius"})
    r = oa.responses.create(
        model=model,
        tools=[R_TOOL],
        input=[
            {"role": "user", "content": "weather in Paris?"},
            {"type": "function_call", "call_id": "call_rt_01", "name": "get_weather", "arguments": args},
            {"type": "function_call_output", "call_id": "call_rt_01", "output": "Sunny, 21 C"},
        ],
    )
    assert r.status == "completed"
    assert r.output_text.startswith("This is a mock response")
    (obs,) = mock.observations(upstream)
    msgs = obs["body"]["messages"]
    if rb_name == "gpt-chat":
        (call_msg,) = [m for m in msgs if m["role"] == "assistant"]
        (tc,) = call_msg["tool_calls"]
        assert (tc["id"], tc["type"], tc["function"]["name"]) == ("call_rt_01", "function", "get_weather")
        assert json.loads(tc["function"]["arguments"]) == json.loads(args)
        (tool_msg,) = [m for m in msgs if m["role"] == "tool"]
        assert tool_msg["tool_call_id"] == "call_rt_01"
        content = tool_msg["content"]
        assert (content if isinstance(content, str) else "".join(p["text"] for p in content)) == "Sunny, 21 C"
        assert msgs.index(call_msg) < msgs.index(tool_msg)
    else:
        uses = [b for m in msgs if m["role"] == "assistant" and isinstance(m["content"], list) for b in m["content"]
                if b["type"] == "tool_use"]
        assert [(u["id"], u["name"], u["input"]) for u in uses] == [("call_rt_01", "get_weather", json.loads(args))]
        results = [b for m in msgs if m["role"] == "user" and isinstance(m["content"], list) for b in m["content"]
                   if b["type"] == "tool_result"]
        assert len(results) == 1 and results[0]["tool_use_id"] == "call_rt_01"
        c = results[0]["content"]
        assert (c if isinstance(c, str) else "".join(p["text"] for p in c)) == "Sunny, 21 C"


# =============================================================================================
# mid-stream errors and UTF-8 on the translated routes


def test_chat_on_anthropic_midstream_error(oa: openai.OpenAI):
    """An Anthropic ``error`` event after 3 chunks reaches the OpenAI SDK as an error, not a clean end."""
    pieces: list[str] = []
    with pytest.raises(openai.APIError):
        for chunk in oa.chat.completions.create(
            model=f"claude/{unique('mock-claude', '-midstream-error')}", messages=MESSAGES, stream=True
        ):
            if chunk.choices and chunk.choices[0].delta.content:
                pieces.append(chunk.choices[0].delta.content)
    assert pieces == mock_pieces(REPLY)[:3]


def test_responses_midstream_error(oa: openai.OpenAI, rb: str):
    """The Responses dialect's way: ``response.failed`` after the text received so far."""
    model, _ = r_model(rb, "-midstream-error")
    events = []
    try:
        for e in oa.responses.create(model=model, input=INPUT, stream=True):
            events.append(e)
    except openai.APIError:
        pass
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert deltas == "".join(mock_pieces(R_REPLY)[:3])
    assert events[-1].type == "response.failed"
    assert events[-1].response.status == "failed"
    assert events[-1].response.error is not None
    assert not any(e.type == "response.completed" for e in events)


def test_chat_on_anthropic_unicode_fixture_split(oa: openai.OpenAI):
    rel = "anthropic/messages/unicode.stream.sse"
    expected = "".join(
        e["delta"]["text"]
        for e in sse_payloads(read_fixture(rel))
        if e["type"] == "content_block_delta" and e["delta"]["type"] == "text_delta"
    )
    chunks = list(
        oa.chat.completions.create(model=f"claude/fixture/{rel}", messages=[{"role": "user", "content": "u"}], stream=True)
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == expected
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == ["stop"]


def test_responses_unicode_stream_equals_plain(oa: openai.OpenAI, rb: str):
    model, _ = r_model(rb, "-unicode")
    plain = oa.responses.create(model=model, input=INPUT)
    events = list(oa.responses.create(model=model, input=INPUT, stream=True))
    assert any(ord(ch) > 0x7F for ch in plain.output_text)
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == plain.output_text
    assert events[-1].response.output_text == plain.output_text
    assert plain.usage.output_tokens == tokens(plain.output_text)
