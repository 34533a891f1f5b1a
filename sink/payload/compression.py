"""Streaming gzip with a pinned deflate implementation and a fixed header.

gzip bytes are stable only for one deflate implementation, version and parameter set, so the
payload artifact records ``codec_identity()`` (seed: "Pin the codec identity"). The header is
written here, not by the library: magic, CM=8, no flags, MTIME=0, XFL from the level (as zlib
sets it) and OS=255 ("unknown") — a library's own gzip wrapper writes the OS it was built on,
which would make the bytes depend on the build host. Raw deflate (wbits -15), memLevel 8,
default strategy; the deflate stream after the 10-byte header equals ``gzip.compress``'s.
"""

from __future__ import annotations

import importlib
import struct
import zlib
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

DEFAULT_IMPLEMENTATION = "zlib"
IMPLEMENTATIONS = ("zlib", "zlib-ng")
_MODULES = {"zlib": "zlib", "zlib-ng": "zlib_ng.zlib_ng"}


class _Compressor(Protocol):
    def compress(self, data: bytes, /) -> bytes: ...

    def flush(self, mode: int = ..., /) -> bytes: ...


class CompressionUnavailable(RuntimeError):
    code = "payload.codec_unavailable"


def _module(implementation: str) -> Any:
    if implementation not in _MODULES:
        raise CompressionUnavailable(f"unknown deflate implementation {implementation}")
    try:
        return importlib.import_module(_MODULES[implementation])
    except ImportError:
        raise CompressionUnavailable(f"deflate implementation {implementation} is not installed") from None


_VERSION_ATTRIBUTE = {"zlib": "ZLIB_RUNTIME_VERSION", "zlib-ng": "ZLIBNG_VERSION"}


def codec_identity(level: int, implementation: str = DEFAULT_IMPLEMENTATION) -> dict[str, object]:
    module = _module(implementation)
    version = getattr(module, _VERSION_ATTRIBUTE[implementation])
    return {
        "format": "gzip",
        "implementation": implementation,
        "library_version": str(version),
        "level": level,
        "wbits": -15,
        "mem_level": 8,
        "strategy": "default",
        "header": {"mtime": 0, "os": 255, "flags": 0},
    }


def _header(level: int) -> bytes:
    xfl = 2 if level == 9 else 4 if level == 1 else 0
    return b"\x1f\x8b\x08\x00" + struct.pack("<I", 0) + bytes((xfl, 255))


def gzip_stream(chunks: Iterable[bytes], level: int, implementation: str = DEFAULT_IMPLEMENTATION) -> Iterator[bytes]:
    """Compress a stream chunk by chunk; memory is bounded by the deflate window."""
    module = _module(implementation)
    compressor: _Compressor = module.compressobj(level, zlib.DEFLATED, -15, 8, zlib.Z_DEFAULT_STRATEGY)
    crc = 0
    size = 0
    yield _header(level)
    for chunk in chunks:
        crc = zlib.crc32(chunk, crc)
        size += len(chunk)
        out = compressor.compress(chunk)
        if out:
            yield out
    yield compressor.flush()
    yield struct.pack("<II", crc & 0xFFFFFFFF, size & 0xFFFFFFFF)
