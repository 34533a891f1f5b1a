"""The fence value as the receiver reads it: the profile's ``mutation_fence.encoding`` of the key.

* ``raw``: the key as it is (every profile before encodings existed, byte for byte);
* ``sf-string``: an RFC 8941 Structured Field String (``"…"``, with ``\\`` and ``"`` escaped), as the
  IETF Idempotency-Key draft sends its header; serialised by ``http_sf``;
* ``uuid``: a name-based UUID (RFC 9562 version 5) of the key under a fixed namespace, as Google
  AIP-155's ``request_id`` must be. It is a function of the key alone, so a replay sends the same
  UUID (a fresh one per attempt would be a new request to the receiver), and its version bits make
  the refused zero UUID impossible.

Pure: no clock, no randomness, no I/O.
"""

from __future__ import annotations

import uuid

# uuid5(NAMESPACE_URL, "urn:restproof:fence:receiver_mutation_key"), fixed forever: changing it would
# give every key a new UUID, so an in-flight delivery's replay would no longer match its first request.
FENCE_UUID_NAMESPACE = uuid.UUID("d375ae4c-f819-5c07-a62a-c56223183301")


class FenceEncodingError(ValueError):
    """The key cannot be sent in this encoding (the message never repeats the key)."""


def encode_fence_value(key: str, encoding: str) -> str:
    if encoding == "raw":
        return key
    if encoding == "uuid":
        return str(uuid.uuid5(FENCE_UUID_NAMESPACE, key))
    if encoding == "sf-string":
        return _sf_string(key)
    raise FenceEncodingError(f"unknown fence encoding {encoding!r}")


def _sf_string(key: str) -> str:
    import http_sf  # noqa: PLC0415 - ~0.1 s to import: only profiles that quote their fence header pay it

    try:
        return str(http_sf.ser(key))
    except (ValueError, TypeError, http_sf.StructuredFieldError):
        raise FenceEncodingError("the key is not an RFC 8941 String (printable ASCII only)") from None
