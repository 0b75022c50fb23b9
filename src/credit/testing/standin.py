"""A scripted stand-in for the Anthropic Messages API, on loopback only.

The LLM underwriter (:mod:`credit.underwriters.claude`) runs the Claude Agent SDK,
which drives the Claude Code CLI, which calls the Messages API. Pointed at this
stand-in (``ANTHROPIC_BASE_URL=http://127.0.0.1:PORT``, :meth:`MessagesStandIn.env`),
the whole real path runs (the SDK's loop, the CLI, its MCP bridge to the in-process
tools, the hooks) and only the model is scripted.

What the CLI needs, and all this speaks:

- ``POST /v1/messages`` (the CLI adds ``?beta=true``) with ``stream: true``: a
  server-sent event stream, ``message_start``, then per content block
  ``content_block_start`` / ``content_block_delta`` (``text_delta``, or
  ``input_json_delta`` carrying a tool call's arguments) / ``content_block_stop``, then
  ``message_delta`` (the stop reason and the output tokens) and ``message_stop``;
- the same with ``stream: false`` (the CLI's fallback after a cut stream): the message
  as one JSON object;
- an API error: the status (400, 500, 529, ...) with the Anthropic error body
  ``{"type": "error", "error": {"type": ..., "message": ...}}``;
- ``POST /v1/messages/count_tokens``: the estimated input tokens.

Anything else is answered 404 and recorded.

A *script* decides each answer: a callable from the request (:class:`ModelRequest`: the
system prompt, the tools offered, the messages so far, the tool results) to the next
assistant turn (:class:`Reply`: text and/or tool calls, and the stop reason), an API
error (:class:`ApiError`), a hang (:class:`Hang`: the connection is held open without
an answer, for a timeout) or a cut stream (:class:`Cut`). Every request is recorded
(:attr:`MessagesStandIn.requests`), with what was answered and the token usage
reported.

Token usage: the Messages API counts tokens with the model's tokenizer, which the
stand-in does not have. It reports an estimate, one token per
:data:`BYTES_PER_TOKEN` bytes of UTF-8 JSON (the request's system prompt, tools and
messages for input; the reply's content for output), and records the exact byte
counts beside it. A :class:`Reply` may give its own :class:`Usage` instead.

Why the standard library's ``http.server`` (a ``ThreadingHTTPServer`` in a daemon
thread) rather than uvicorn: the scripts are plain synchronous functions; a thread per
connection lets one request hang while the others are answered, with no event loop to
share with the test's own; and it adds no dependency. It binds 127.0.0.1 on an
ephemeral port and nothing else, so nothing it serves leaves the machine.
"""

from __future__ import annotations

import json
import math
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Final, Literal, Protocol, TypeAlias
from urllib.parse import urlsplit

__all__ = [
    "BYTES_PER_TOKEN",
    "Answer",
    "ApiError",
    "Cut",
    "Hang",
    "MessagesStandIn",
    "ModelRequest",
    "RecordedExchange",
    "Reply",
    "Script",
    "Text",
    "ToolCall",
    "ToolResult",
    "Usage",
    "estimate_tokens",
]

BYTES_PER_TOKEN: Final = 4
"""The stand-in's token estimate: one token per this many bytes of UTF-8 JSON."""

StopReason: TypeAlias = Literal["end_turn", "tool_use", "max_tokens", "stop_sequence"]

# The Anthropic error type for each status the stand-in is asked to answer with.
_ERROR_TYPES: Final = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def estimate_tokens(value: Any) -> int:
    """The stand-in's token estimate for a JSON value (at least 1)."""
    data = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return max(1, math.ceil(len(data) / BYTES_PER_TOKEN))


# ------------------------------------------------------------------ what a script answers


@dataclass(frozen=True, slots=True)
class Text:
    """A text block of the assistant turn."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A ``tool_use`` block: the tool's name as offered in the request, its arguments.
    ``id`` is filled in by the stand-in when empty."""

    name: str
    input: Mapping[str, Any] = field(default_factory=dict)
    id: str = ""


@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage as the Messages API reports it."""

    input_tokens: int
    output_tokens: int


@dataclass(frozen=True, slots=True)
class Reply:
    """The next assistant turn. ``stop_reason`` defaults to ``tool_use`` when the turn
    calls a tool, ``end_turn`` otherwise; ``usage`` to the stand-in's estimate."""

    blocks: tuple[Text | ToolCall, ...]
    stop_reason: StopReason | None = None
    usage: Usage | None = None

    @classmethod
    def text(cls, text: str) -> Reply:
        return cls((Text(text),))

    @classmethod
    def call(cls, name: str, arguments: Mapping[str, Any] | None = None) -> Reply:
        return cls((ToolCall(name, dict(arguments or {})),))

    @property
    def stop(self) -> StopReason:
        if self.stop_reason is not None:
            return self.stop_reason
        return "tool_use" if any(isinstance(b, ToolCall) for b in self.blocks) else "end_turn"


@dataclass(frozen=True, slots=True)
class ApiError:
    """An API error: ``status`` with the Anthropic error body. ``error_type`` defaults to
    the one the API uses for the status; ``retry`` False adds ``x-should-retry: false``
    (the API's own header telling a client not to retry)."""

    status: int
    message: str
    error_type: str | None = None
    retry: bool = True

    @property
    def type(self) -> str:
        if self.error_type is not None:
            return self.error_type
        return _ERROR_TYPES.get(self.status, "api_error")

    def body(self) -> dict[str, Any]:
        return {"type": "error", "error": {"type": self.type, "message": self.message}}


@dataclass(frozen=True, slots=True)
class Hang:
    """Hold the request open, answering nothing, for ``seconds`` (or until the stand-in
    closes); then drop the connection."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Cut:
    """Start streaming ``reply`` and drop the connection after ``events`` events (a cut
    stream). A non-streaming request is answered with the whole reply."""

    reply: Reply
    events: int = 1


Answer: TypeAlias = Reply | ApiError | Hang | Cut


# ------------------------------------------------------------------ what a script reads


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A tool result the model was sent: the tool it answers (by the call's id), the
    text of its content blocks, and whether it is an error."""

    tool_use_id: str
    name: str
    text: str
    is_error: bool


@dataclass(frozen=True)
class ModelRequest:
    """One request to the stand-in, as the CLI sent it."""

    seq: int
    method: str
    path: str
    headers: Mapping[str, str]
    body: Mapping[str, Any]
    raw: bytes

    @property
    def endpoint(self) -> str:
        return urlsplit(self.path).path

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream", False))

    @property
    def model(self) -> str:
        return str(self.body.get("model", ""))

    @property
    def system_texts(self) -> tuple[str, ...]:
        """The system prompt's text blocks, in order (a plain string is one block)."""
        system = self.body.get("system")
        if system is None:
            return ()
        if isinstance(system, str):
            return (system,)
        return tuple(str(b.get("text", "")) for b in system if isinstance(b, Mapping))

    @property
    def tool_names(self) -> tuple[str, ...]:
        return tuple(str(t.get("name")) for t in self.body.get("tools", ()) or ())

    @property
    def messages(self) -> Sequence[Mapping[str, Any]]:
        messages: Sequence[Mapping[str, Any]] = self.body.get("messages", ())
        return messages

    def tool(self, suffix: str) -> str | None:
        """The offered tool whose name is ``suffix`` or ends with ``__suffix``."""
        for name in self.tool_names:
            if name == suffix or name.endswith(f"__{suffix}"):
                return name
        return None

    def tool_calls(self) -> list[ToolCall]:
        """Every tool call the assistant made so far, in order."""
        calls: list[ToolCall] = []
        for message in self.messages:
            if message.get("role") != "assistant":
                continue
            for block in _blocks(message):
                if block.get("type") == "tool_use":
                    calls.append(ToolCall(str(block["name"]), block.get("input", {}), block["id"]))
        return calls

    def tool_results(self) -> list[ToolResult]:
        """Every tool result sent back so far, in order, each named by its call."""
        names = {call.id: call.name for call in self.tool_calls()}
        results: list[ToolResult] = []
        for message in self.messages:
            if message.get("role") != "user":
                continue
            for block in _blocks(message):
                if block.get("type") != "tool_result":
                    continue
                tool_use_id = str(block.get("tool_use_id"))
                results.append(
                    ToolResult(
                        tool_use_id=tool_use_id,
                        name=names.get(tool_use_id, ""),
                        text=_content_text(block.get("content")),
                        is_error=bool(block.get("is_error", False)),
                    )
                )
        return results

    def text(self) -> str:
        """The request body as sent (for "does this request carry X" assertions)."""
        return self.raw.decode("utf-8", errors="replace")


def _blocks(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or () if isinstance(b, Mapping)]


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(
        str(b.get("text", ""))
        for b in content
        if isinstance(b, Mapping) and b.get("type") == "text"
    )


class Script(Protocol):
    """A scripted model: the next answer to a request."""

    def __call__(self, request: ModelRequest) -> Answer: ...


@dataclass(frozen=True)
class RecordedExchange:
    """A request and what the stand-in did with it.

    ``answer`` is None for a request that was not a message (counted tokens, a 404) or
    whose script raised (``script_error``; answered 500). ``usage`` is the usage
    reported for a reply; ``input_bytes``/``output_bytes`` the exact byte counts the
    estimate was made from.
    """

    request: ModelRequest
    status: int
    answer: Answer | None
    usage: Usage | None = None
    input_bytes: int = 0
    output_bytes: int = 0
    script_error: str | None = None
    seconds: float = 0.0


# ------------------------------------------------------------------ the wire


def _input_of(body: Mapping[str, Any]) -> Any:
    return {k: body.get(k) for k in ("system", "tools", "messages")}


def _nbytes(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def _content(reply: Reply) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    for block in reply.blocks:
        if isinstance(block, Text):
            content.append({"type": "text", "text": block.text})
        else:
            content.append(
                {
                    "type": "tool_use",
                    "id": block.id or f"toolu_{uuid.uuid4().hex[:24]}",
                    "name": block.name,
                    "input": dict(block.input),
                }
            )
    return content


def _message(model: str, content: list[dict[str, Any]], reply: Reply, usage: Usage) -> Any:
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": reply.stop,
        "stop_sequence": None,
        "usage": {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }


def _events(message: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """The SSE events of one message, as the Messages API streams it."""
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    yield "message_start", {"type": "message_start", "message": start}
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            opening: dict[str, Any] = {"type": "text", "text": ""}
            delta: dict[str, Any] = {"type": "text_delta", "text": block["text"]}
        else:
            opening = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        yield (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": opening},
        )
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": usage["output_tokens"]},
        },
    )
    yield "message_stop", {"type": "message_stop"}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = False

    def __init__(self, standin: MessagesStandIn) -> None:
        self.standin = standin
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: every request is recorded by the stand-in instead."""

    def do_GET(self) -> None:
        self._not_found(b"")

    def do_HEAD(self) -> None:
        self._not_found(b"")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {}
        standin = self.server.standin
        request = standin._new_request("POST", self.path, dict(self.headers.items()), body, raw)
        endpoint = request.endpoint
        if endpoint == "/v1/messages/count_tokens":
            tokens = estimate_tokens(_input_of(body))
            self._json(200, {"input_tokens": tokens})
            standin._record(RecordedExchange(request, 200, None))
            return
        if endpoint != "/v1/messages":
            self._not_found(raw, request)
            return
        started = time.monotonic()
        try:
            answer = standin.script(request)
        except Exception as err:  # a broken script is answered, recorded and re-raised later
            message = f"the stand-in's script raised {type(err).__name__}: {err}"
            self._json(500, ApiError(500, message, retry=False).body(), retry=False)
            standin._record(
                RecordedExchange(request, 500, None, script_error=message),
                failure=err,
            )
            return
        exchange = self._answer(request, answer)
        standin._record(
            RecordedExchange(
                request,
                exchange[0],
                answer,
                usage=exchange[1],
                input_bytes=exchange[2],
                output_bytes=exchange[3],
                seconds=time.monotonic() - started,
            )
        )

    # -------------------------------------------------------------- answers

    def _answer(self, request: ModelRequest, answer: Answer) -> tuple[int, Usage | None, int, int]:
        if isinstance(answer, ApiError):
            self._json(answer.status, answer.body(), retry=answer.retry)
            return answer.status, None, 0, 0
        if isinstance(answer, Hang):
            self.server.standin._closing.wait(answer.seconds)
            self.close_connection = True
            return 0, None, 0, 0
        reply = answer.reply if isinstance(answer, Cut) else answer
        content = _content(reply)
        input_bytes = _nbytes(_input_of(request.body))
        output_bytes = _nbytes(content)
        usage = reply.usage or Usage(
            max(1, math.ceil(input_bytes / BYTES_PER_TOKEN)),
            max(1, math.ceil(output_bytes / BYTES_PER_TOKEN)),
        )
        message = _message(request.model, content, reply, usage)
        if not request.stream:
            self._json(200, message)
            return 200, usage, input_bytes, output_bytes
        cut_after = answer.events if isinstance(answer, Cut) else None
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("request-id", f"req_{request.seq}")
        self.end_headers()
        for sent, (event, data) in enumerate(_events(message)):
            if cut_after is not None and sent >= cut_after:
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return 200, usage, input_bytes, output_bytes
            chunk = f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        return 200, usage, input_bytes, output_bytes

    def _json(self, status: int, value: Any, *, retry: bool = True) -> None:
        data = json.dumps(value).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", f"req_{uuid.uuid4().hex[:12]}")
        if not retry:
            self.send_header("x-should-retry", "false")
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _not_found(self, raw: bytes, request: ModelRequest | None = None) -> None:
        standin = self.server.standin
        if request is None:
            request = standin._new_request(self.command, self.path, dict(self.headers), {}, raw)
        body = ApiError(404, f"the stand-in serves no {self.command} {self.path}").body()
        data = json.dumps(body).encode("utf-8")
        self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        standin._record(RecordedExchange(request, 404, None))


# ------------------------------------------------------------------ the stand-in


class MessagesStandIn:
    """The stand-in Messages API, served on 127.0.0.1 while the context is open::

        with MessagesStandIn(script) as api:
            underwriter = ClaudeUnderwriter(env=api.env(config_dir))
            ...
            api.requests  # every request, in order

    A script that raises is answered with a 500 (and ``x-should-retry: false``); the
    first such error is re-raised by :meth:`check` (and on leaving the context, unless
    another exception is already on its way).
    """

    def __init__(self, script: Script | Callable[[ModelRequest], Answer]) -> None:
        self.script = script
        self._lock = threading.Lock()
        self._exchanges: list[RecordedExchange] = []
        self._seq = 0
        self._failure: BaseException | None = None
        self._closing = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -------------------------------------------------------------- lifecycle

    def start(self) -> MessagesStandIn:
        if self._server is not None:
            return self
        self._closing.clear()
        self._server = _Server(self)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="messages-standin",
            daemon=True,
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving: hanging requests are released, the port is closed."""
        self._closing.set()
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is not None:
            server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join()

    def __enter__(self) -> MessagesStandIn:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
        if exc is None:
            self.check()

    def check(self) -> None:
        """Re-raise the first exception a script raised, if any."""
        if self._failure is not None:
            raise self._failure

    # -------------------------------------------------------------- where it is

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the stand-in is not serving")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self, config_dir: str, *, max_retries: int = 0) -> dict[str, str]:
        """The environment that points the Claude Code CLI at this stand-in and keeps
        everything else off: a dummy key, no nonessential traffic, no telemetry,
        autoupdater or error reporting, its configuration in ``config_dir``, and
        ``max_retries`` retries of a failed API call."""
        return {
            "ANTHROPIC_BASE_URL": self.base_url,
            "ANTHROPIC_API_KEY": "stand-in-key",
            "CLAUDE_CONFIG_DIR": config_dir,
            "CLAUDE_CODE_MAX_RETRIES": str(max_retries),
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
        }

    # -------------------------------------------------------------- the record

    @property
    def exchanges(self) -> list[RecordedExchange]:
        with self._lock:
            return list(self._exchanges)

    @property
    def requests(self) -> list[ModelRequest]:
        """The Messages requests (``POST /v1/messages``), in order."""
        return [e.request for e in self.exchanges if e.request.endpoint == "/v1/messages"]

    @property
    def replies(self) -> list[RecordedExchange]:
        """The exchanges answered with a reply (streamed, cut or not)."""
        return [e for e in self.exchanges if isinstance(e.answer, (Reply, Cut))]

    def usage(self) -> Usage:
        """The token usage the stand-in reported, summed over its replies."""
        used = [e.usage for e in self.replies if e.usage is not None]
        return Usage(sum(u.input_tokens for u in used), sum(u.output_tokens for u in used))

    def _new_request(
        self, method: str, path: str, headers: Mapping[str, str], body: Any, raw: bytes
    ) -> ModelRequest:
        with self._lock:
            self._seq += 1
            seq = self._seq
        return ModelRequest(
            seq, method, path, headers, body if isinstance(body, Mapping) else {}, raw
        )

    def _record(self, exchange: RecordedExchange, *, failure: BaseException | None = None) -> None:
        with self._lock:
            self._exchanges.append(exchange)
            if failure is not None and self._failure is None:
                self._failure = failure
