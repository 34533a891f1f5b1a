"""Reading authoring documents from disk through the bounded YAML loader, and resolving the
workload's references to profile and binding files.

Layout (defaults, relative to the workload's ``scenarios/`` directory)::

    scenarios/workloads/<name>.yaml
    scenarios/profiles/<profile-id>@<version>.yaml
    scenarios/bindings/<connection_ref>.yaml
    scenarios/environments/local.yaml
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from sink.bounded_yaml import BoundedYamlError, load_bounded_yaml_file
from sink.compiler.compile import compile_plan
from sink.compiler.diagnostics import CompileError, Diagnostic, from_validation_error, from_yaml_error
from sink.contracts.binding import ConnectionBinding
from sink.contracts.environment import EnvironmentSnapshot
from sink.contracts.mapping import PayloadMapping
from sink.contracts.plan import CompiledPlan
from sink.contracts.profile import OperationProfile
from sink.contracts.workload import WorkloadManifest

ModelT = TypeVar("ModelT", bound=BaseModel)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class SourcePaths:
    workload: Path
    profiles_dir: Path
    bindings_dir: Path
    environment: Path
    mappings_dir: Path | None = None


def default_paths(
    workload: Path,
    *,
    profiles_dir: Path | None = None,
    bindings_dir: Path | None = None,
    environment: Path | None = None,
    mappings_dir: Path | None = None,
) -> SourcePaths:
    # absolute(): a bare file name ("w.yaml" run inside workloads/) still finds its scenarios/ directory.
    scenarios = workload.absolute().parent.parent
    return SourcePaths(
        workload=workload,
        profiles_dir=profiles_dir if profiles_dir is not None else scenarios / "profiles",
        bindings_dir=bindings_dir if bindings_dir is not None else scenarios / "bindings",
        environment=environment if environment is not None else scenarios / "environments" / "local.yaml",
        mappings_dir=mappings_dir if mappings_dir is not None else scenarios / "mappings",
    )


def load_document(path: Path, model: type[ModelT]) -> ModelT:
    """Bounded YAML load plus closed-model validation; any failure is a ``CompileError``."""
    source = str(path)
    try:
        data = load_bounded_yaml_file(path)
    except BoundedYamlError as exc:
        raise CompileError([from_yaml_error(exc, source)]) from None
    if not isinstance(data, dict):
        raise CompileError.single("contract.invalid_value", source, "the document must be a mapping")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise CompileError(from_validation_error(exc, source)) from None


def _referenced_file(directory: Path, name: str, what: str, location: str) -> Path:
    # Reference names are validated identifiers (no '/', no '..'); the containment check is a
    # second line of defence against a symlinked escape.
    candidate = directory / f"{name}.yaml"
    try:
        found = candidate.is_file() and directory.resolve() in candidate.resolve().parents
    except OSError:  # e.g. an unreadable directory: report it as a missing reference, not a crash
        found = False
    if not found:
        raise CompileError.single("contract.unknown_reference", location, f"no {what} named by this reference "
                                  f"exists in {directory}")
    return candidate


def compile_files(paths: SourcePaths) -> CompiledPlan:
    """Load, validate and compile; every problem found in any document is reported together."""
    workload = load_document(paths.workload, WorkloadManifest)
    problems: list[Diagnostic] = []
    environment = _try(lambda: load_document(paths.environment, EnvironmentSnapshot), problems)
    workload_source = str(paths.workload)
    profile_path = _try(lambda: _referenced_file(
        paths.profiles_dir, workload.sink.operation_profile_ref, "operation profile",
        f"{workload_source}#sink.operation_profile_ref"), problems)
    binding_path = _try(lambda: _referenced_file(
        paths.bindings_dir, workload.sink.connection_ref, "connection binding",
        f"{workload_source}#sink.connection_ref"), problems)
    mappings_dir = paths.mappings_dir if paths.mappings_dir is not None else (
        paths.workload.absolute().parent.parent / "mappings")
    mapping_path = _try(lambda: _referenced_file(
        mappings_dir, workload.sink.payload.mapping_ref, "payload mapping",
        f"{workload_source}#sink.payload.mapping_ref"), problems)
    profile = _try(lambda: load_document(profile_path, OperationProfile), problems) if profile_path else None
    binding = _try(lambda: load_document(binding_path, ConnectionBinding), problems) if binding_path else None
    mapping = _try(lambda: load_document(mapping_path, PayloadMapping), problems) if mapping_path else None
    if problems or environment is None or profile is None or binding is None or mapping is None:
        raise CompileError(problems)
    try:
        return compile_plan(workload, profile, binding, environment, mapping=mapping)
    except CompileError as exc:
        sources = {"workload": workload_source, "profile": str(profile_path), "binding": str(binding_path),
                   "mapping": str(mapping_path)}
        raise CompileError([_relocate(diagnostic, sources) for diagnostic in exc.diagnostics]) from None


def _relocate(diagnostic: Diagnostic, sources: dict[str, str]) -> Diagnostic:
    kind, sep, rest = diagnostic.location.partition("#")
    if sep and kind in sources:
        return Diagnostic(diagnostic.code, f"{sources[kind]}#{rest}", diagnostic.message)
    return diagnostic


def _try(load: Callable[[], T], problems: list[Diagnostic]) -> T | None:
    try:
        return load()
    except CompileError as exc:
        problems.extend(exc.diagnostics)
        return None
