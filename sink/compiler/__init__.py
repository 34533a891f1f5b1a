"""Offline compiler: workload + operation profile + connection binding + environment ->
immutable ``restproof.rest_delivery_plan.v1`` plan, with every identity digest."""

from sink.compiler.compile import (
    COMPILER_VERSION,
    child_delivery_identity,
    compile_plan,
    delivery_identity,
    plan_digest_matches,
    required_capabilities,
)
from sink.compiler.diagnostics import CONTRACT_CODES, CompileError, Diagnostic
from sink.compiler.loading import SourcePaths, compile_files, default_paths, load_document
from sink.compiler.semantics import binding_semantics_digest, profile_digests, semantic_value

__all__ = [
    "COMPILER_VERSION",
    "CONTRACT_CODES",
    "CompileError",
    "Diagnostic",
    "SourcePaths",
    "binding_semantics_digest",
    "child_delivery_identity",
    "compile_files",
    "compile_plan",
    "default_paths",
    "delivery_identity",
    "load_document",
    "plan_digest_matches",
    "profile_digests",
    "required_capabilities",
    "semantic_value",
]
