"""The Kafka protocol without I/O (h11-style): bytes in, requests out; responses in, bytes out.

A :class:`Connection` is fed whatever the socket delivered (``receive_data``) and returns complete
:class:`Request` events (or a :class:`ProtocolViolation` after which the connection must be
closed); ``encode_response`` turns a response body into the framed bytes to send.  Frames are an
int32 size then the header and body; the size is bounded before anything is buffered.  Request
headers are v2 for flexible request versions (v1 otherwise); response headers v1 for flexible
versions except ApiVersions, whose response header is always v0.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from specs import protocol_messages as P
from specs.message_types import Struct, as_body, typed
from specs.protocol_messages import ApiKey

from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log import file_region

MAX_FRAME_BYTES = 100 * 1024 * 1024
_I32 = struct.Struct(">i")


#: record bytes that stay in a segment file (what Segment.read returns): the response carries their
#: length and leaves a hole that the transport fills with sendfile (zero copy), as Kafka's broker
#: sends fetched records
FileRegion = file_region.FileRegion


class Chunks(bytearray):
    """A response body being built, with :class:`FileRegion` holes: ``regions`` lists (position, region)
    (``Message.build_into`` calls :meth:`hole` for a ``records`` value that is no bytes)."""

    def __init__(self):
        super().__init__()
        self.regions: list = []

    def hole(self, region: FileRegion) -> None:
        self.regions.append((len(self), region))


@dataclass
class Request:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        m = P.REQUESTS.get(self.api_key)
        return m.name if m else f"api_key_{self.api_key}"

    @cached_property
    def typed(self) -> Any:
        """The body as its request class, generated from the schema (:mod:`specs.message_types`):
        snake_case attributes, ``req.topics[0].partitions``, not dict keys."""
        return typed(self.api_key, self.body)


@dataclass
class UnsupportedRequest:
    """A well-framed request this broker cannot parse (unknown API or version)."""
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


@dataclass
class ProtocolViolation:
    reason: str


class Connection:
    def __init__(self, max_frame: int = MAX_FRAME_BYTES):
        self.buf = bytearray()
        self.max_frame = max_frame
        self.closed = False

    def pending(self) -> int:
        """Bytes of the unfinished frame in the buffer, as its size prefix declares them (what a
        server reserves before reading the rest); 0 with no frame begun."""
        if not self.buf:
            return 0
        if len(self.buf) < 4:
            return 4
        return 4 + max(0, _I32.unpack_from(self.buf, 0)[0])

    def receive_data(self, data: bytes) -> list:
        if self.closed:
            return []
        self.buf += data
        events = []
        while len(self.buf) >= 4:
            (size,) = _I32.unpack_from(self.buf, 0)
            if size < 8 or size > self.max_frame:
                self.closed = True
                events.append(ProtocolViolation(f"frame size {size} outside [8, {self.max_frame}]"))
                return events
            if len(self.buf) < 4 + size:
                break
            frame = bytes(self.buf[4:4 + size])
            del self.buf[:4 + size]
            ev = parse_request(frame)
            events.append(ev)
            if isinstance(ev, ProtocolViolation):
                self.closed = True
                return events
        return events


def request_header_version(api_key: int, api_version: int) -> int:
    m = P.REQUESTS.get(api_key)
    return 2 if m is not None and m.is_flexible(api_version) else 1


def parse_request(frame: bytes):
    if len(frame) < 8:
        return ProtocolViolation("request header truncated")
    api_key, api_version, corr = struct.unpack_from(">hhi", frame, 0)
    m = P.REQUESTS.get(api_key)
    hv = request_header_version(api_key, api_version)
    try:
        header, used = P.RequestHeader.read_prefix(frame, hv)
    except KafkaFormatError as e:
        if api_key != ApiKey.API_VERSIONS or hv == 1:
            return ProtocolViolation(f"bad request header: {e.problem.detail}")
        # a client probing with an ApiVersions version we do not know may frame it the old way
        try:
            header, used = P.RequestHeader.read_prefix(frame, 1)
        except KafkaFormatError as e1:
            return ProtocolViolation(f"bad request header: {e1.problem.detail}")
    client = header.get("ClientId")
    if m is None or not (m.valid[0] <= api_version <= m.valid[1]):
        return UnsupportedRequest(api_key, api_version, corr, client)
    try:
        body = m.read(frame[used:], api_version)
    except KafkaFormatError as e:
        if api_key == ApiKey.API_VERSIONS:
            return UnsupportedRequest(api_key, api_version, corr, client)
        return ProtocolViolation(f"malformed {m.name} v{api_version}: {e.problem.detail}")
    return Request(api_key, api_version, corr, client, body)


def encode_response(api_key: int, api_version: int, correlation_id: int, body: dict | Struct) -> bytes:
    """The framed response; ``body`` its generated class (:mod:`specs.messages`) or a PascalCase dict."""
    m = P.RESPONSES[api_key]
    flexible = m.is_flexible(api_version) and api_key != ApiKey.API_VERSIONS
    header = P.ResponseHeader.build({"CorrelationId": correlation_id}, 1 if flexible else 0)
    payload = header + m.build(as_body(body), api_version)
    return _I32.pack(len(payload)) + payload


def encode_response_parts(api_key: int, api_version: int, correlation_id: int, body: dict | Struct) -> list:
    """The framed response as a list of ``bytes`` and :class:`FileRegion` parts:
    record bytes left in their segment files, for the transport to sendfile."""
    m = P.RESPONSES[api_key]
    flexible = m.is_flexible(api_version) and api_key != ApiKey.API_VERSIONS
    header = P.ResponseHeader.build({"CorrelationId": correlation_id}, 1 if flexible else 0)
    chunks = Chunks()
    m.build_into(chunks, as_body(body), api_version)
    total = len(header) + len(chunks) + sum(r.size for _pos, r in chunks.regions)
    parts, last = [_I32.pack(total) + header], 0
    for pos, region in chunks.regions:
        parts.append(bytes(chunks[last:pos]))
        parts.append(region)
        last = pos
    parts.append(bytes(chunks[last:]))
    return [p for p in parts if not isinstance(p, bytes) or p]
