"""What the Chakra export and import checks share: how a check fails, and protobuf's wire format
as Chakra files frame it, without protobuf (a message is its length as a varint, then its bytes:
Chakra's protolib.py encodeMessage)."""

import sys


def fail(msg):
    print("FAIL:", msg, file=sys.stderr)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def varint(data, pos):
    """The varint at `pos` of `data` and the position after it; ValueError when it runs off the
    end."""
    value, shift = 0, 0
    while True:
        if pos >= len(data):
            raise ValueError("truncated varint")
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, pos


def encode_varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)
