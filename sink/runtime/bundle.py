"""Export the sealed requests of one interval as plain files (``delivery bundle``).

For comparison runs only: the certification harness hands these exact bytes to its naive
baseline sinks, so that they send what the reference sink sends and the receiver's ledger can
tell who applied what twice. Sealing is offline (no journal, no credential, no network); each
child's wire body is streamed to ``bodies/NNNN.bin`` beside a redacted ``bundle.json``.
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

from sink.artifacts.local import LocalArtifactStore
from sink.contracts.plan import CompiledPlan
from sink.payload.body import WireBody
from sink.preparation import seal_all
from sink.runtime.composition import open_offline
from sink.source import source_port

BUNDLE_SCHEMA = "restproof.request_bundle.v1"


def export_bundle(plan: CompiledPlan, scope_from: date, scope_to: date, *, workload_dir: Path,
                  out: Path) -> dict[str, Any]:
    if plan.workload.source is None:
        raise ValueError("the workload names no source")
    with open_offline(out / "artifacts") as store:
        return _export(plan, scope_from, scope_to, workload_dir=workload_dir, out=out, store=store)


def _export(plan: CompiledPlan, scope_from: date, scope_to: date, *, workload_dir: Path, out: Path,
            store: LocalArtifactStore) -> dict[str, Any]:
    assert plan.workload.source is not None
    sealed = seal_all(plan, scope_from, scope_to, source=source_port(plan.workload.source, workload_dir),
                      store=store)
    (out / "bodies").mkdir(parents=True, exist_ok=True)
    children = []
    for child in sealed.children:
        body = WireBody.load(store, child.manifest_ref)
        path = out / "bodies" / f"{child.spec.ordinal:04d}.bin"
        with path.open("wb") as handle:
            for chunk in body.chunks():
                handle.write(chunk)
        rendered = child.spec.rendered
        headers = [list(pair) for pair in rendered.headers]
        if body.content_encoding:
            headers.append(["Content-Encoding", body.content_encoding])
        children.append({
            "ordinal": child.spec.ordinal, "scope_from": child.spec.scope_from.isoformat(),
            "scope_to": child.spec.scope_to.isoformat(), "rows": child.rows, "method": rendered.method,
            "path_and_query": rendered.path_and_query, "headers": headers, "content_type": body.content_type,
            "wire_digest": child.wire_digest, "wire_bytes": child.wire_bytes, "body_file": path.name,
            "receiver_mutation_key": child.spec.receiver_mutation_key,
        })
    document = {"schema_id": BUNDLE_SCHEMA, "resource": plan.workload.resource,
                "protocol_family": plan.operation.protocol_family, "children": children}
    (out / "bundle.json").write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    return document
