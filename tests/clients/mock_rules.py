"""The mock upstream's deterministic rules (crates/tollgate-mock/README.md) and fixture readers.

Expected values in the client tests are derived from these, never copied from a response.
"""

from __future__ import annotations

import json
import math
import uuid
from typing import Any

from conftest import fixtures_dir

MOCK_CREATED = 1767225600
MOCK_CHUNKS = 8


def tokens(text: str) -> int:
    """The mock's token rule: ceil(utf8 bytes / 4)."""
    return math.ceil(len(text.encode("utf-8")) / 4)


def mock_reply(user_text: str) -> str:
    """The mock's reply to a last user message (first 40 characters quoted)."""
    return "This is a mock response to: " + user_text[:40]


def mock_usage(messages: list[dict[str, str]], reply: str) -> dict[str, int]:
    prompt = tokens("".join(m["content"] for m in messages)) + 3 * len(messages)
    completion = tokens(reply)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def mock_pieces(reply: str, n: int = MOCK_CHUNKS) -> list[str]:
    """The mock's stream split: ``n`` nearly equal runs of characters."""
    cuts = [i * len(reply) // n for i in range(n + 1)]
    return [reply[cuts[i] : cuts[i + 1]] for i in range(n)]


def unique(prefix: str, suffix: str = "") -> str:
    """A model name no other test uses, so mock scripts and observations stay per-test."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}{suffix}"


def usage_of(u: Any) -> dict[str, int]:
    return {"prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens, "total_tokens": u.total_tokens}


def read_fixture(rel: str) -> bytes:
    return (fixtures_dir() / rel).read_bytes()


def sse_payloads(raw: bytes) -> list[Any]:
    """JSON payloads of a fixture's ``data:`` events (``[DONE]`` left out)."""
    out = []
    for event in raw.decode("utf-8").split("\n\n"):
        for line in event.split("\n"):
            if line.startswith("data: ") and line != "data: [DONE]":
                out.append(json.loads(line[len("data: ") :]))
    return out
