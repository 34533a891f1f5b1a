"""``delivery reconcile / abandon / transfer-capacity``: the operator's audited decisions.

``reconcile`` takes a child or a parent (every unresolved child of it, in one command) and refines
their effects from the profile's certified read-only proof; ``abandon`` and ``transfer-capacity``
record an operator decision on one child. Without ``--apply`` each prints what it would do and
writes nothing. The exit code is the delivery's, read back from the journal afterwards.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from sink.cli.common import FormatOpt, OutputFormat, app, emit_json
from sink.cli.guarded import guarded
from sink.cli.result_views import decision_document, reconcile_document
from sink.cli.runtime_commands import (
    ArtifactsOpt,
    JournalOpt,
    OperationOpt,
    StateDirOpt,
    context,
    emit,
    locations,
    settings,
)

if TYPE_CHECKING:  # the sink is imported by each command (start-up cost: see sink.cli.common)
    from sink.journal.records import OperatorDecisionKind

ApplyOpt = Annotated[bool, typer.Option("--apply", help="Record it (append-only); without it nothing is written.")]
OperatorOpt = Annotated[str, typer.Option("--operator", help="Who decides (audited).")]
ReasonOpt = Annotated[str, typer.Option("--reason", max=500, help="Why (hashed into the audited evidence).")]


@app.command(name="reconcile")
def reconcile_command(
    operation_id: OperationOpt,
    *,
    apply: ApplyOpt = False,
    operator: OperatorOpt = "operator",
    expected_profile_contract_digest: Annotated[str | None, typer.Option("--expected-profile-contract-digest")] = None,
    expected_mutation_intent_digest: Annotated[str | None, typer.Option("--expected-mutation-intent-digest")] = None,
    state_dir: StateDirOpt = Path(".restproof"),
    journal: JournalOpt = None,
    artifacts: ArtifactsOpt = None,
    output: FormatOpt = OutputFormat.TEXT,
) -> None:
    """Refine unknown or partial effects from read-only receiver proof, as an operator (child or parent)."""
    from sink.runtime.reconcile import Guards, reconcile  # noqa: PLC0415 - start-up cost

    guards = Guards(expected_profile_contract_digest, expected_mutation_intent_digest)
    report = guarded(output, lambda: reconcile(
        operation_id, locations=locations(state_dir, journal, artifacts), settings=settings(None, 30.0, True),
        operator_id=operator, guards=guards, apply=apply))
    document = reconcile_document(report, context(state_dir, journal, artifacts))
    emit(document, output)
    raise typer.Exit(int(report.result.exit_class))


def _decide(kind: OperatorDecisionKind, operation_id: str, *, apply: bool, operator: str, reason: str,
            state_dir: Path, journal: str | None, artifacts: Path | None, output: OutputFormat) -> None:
    from sink.runtime.operator_decisions import decide  # noqa: PLC0415 - start-up cost

    report = guarded(output, lambda: decide(operation_id, kind, locations=locations(state_dir, journal, artifacts),
                                            operator_id=operator, reason=reason, apply=apply))
    emit(decision_document(report, context(state_dir, journal, artifacts)), output)
    raise typer.Exit(int(report.result.exit_class))


@app.command()
def abandon(
    operation_id: OperationOpt,
    *,
    apply: ApplyOpt = False,
    operator: OperatorOpt = "operator",
    reason: ReasonOpt = "",
    state_dir: StateDirOpt = Path(".restproof"),
    journal: JournalOpt = None,
    artifacts: ArtifactsOpt = None,
    output: FormatOpt = OutputFormat.TEXT,
) -> None:
    """Give up a child under its generation: its capacity is freed and a newer generation no longer waits."""
    from sink.journal.records import OperatorDecisionKind  # noqa: PLC0415 - start-up cost

    _decide(OperatorDecisionKind.ABANDON, operation_id, apply=apply, operator=operator, reason=reason,
            state_dir=state_dir, journal=journal, artifacts=artifacts, output=output)


@app.command(name="transfer-capacity")
def transfer_capacity(
    operation_id: OperationOpt,
    *,
    apply: ApplyOpt = False,
    operator: OperatorOpt = "operator",
    reason: ReasonOpt = "",
    state_dir: StateDirOpt = Path(".restproof"),
    journal: JournalOpt = None,
    artifacts: ArtifactsOpt = None,
    output: FormatOpt = OutputFormat.TEXT,
) -> None:
    """Move a child's remote-job slot to the incident reserve (its effect and fence are unchanged)."""
    from sink.journal.records import OperatorDecisionKind  # noqa: PLC0415 - start-up cost

    _decide(OperatorDecisionKind.TRANSFER_CAPACITY, operation_id, apply=apply, operator=operator, reason=reason,
            state_dir=state_dir, journal=journal, artifacts=artifacts, output=output)


@app.command(name="retire-marker")
def retire_marker_command(
    operation_id: OperationOpt,
    *,
    attempt: Annotated[int, typer.Option("--attempt", min=1, help="The orphan marker's attempt ordinal.")],
    evidence: Annotated[str, typer.Option("--evidence", min=1, max=500, help="What proves no effect (hashed).")],
    apply: ApplyOpt = False,
    operator: OperatorOpt = "operator",
    state_dir: StateDirOpt = Path(".restproof"),
    journal: JournalOpt = None,
    artifacts: ArtifactsOpt = None,
    output: FormatOpt = OutputFormat.TEXT,
) -> None:
    """Retire an orphan MAY_ATTEMPT marker that caused no remote effect (its ordinal is consumed)."""
    from sink.runtime.operator_decisions import retire_marker  # noqa: PLC0415 - start-up cost

    report = guarded(output, lambda: retire_marker(operation_id, attempt, locations=locations(
        state_dir, journal, artifacts), operator_id=operator, evidence=evidence, apply=apply))
    emit(decision_document(report, context(state_dir, journal, artifacts)), output)
    raise typer.Exit(int(report.result.exit_class))


@app.command(name="attest-epoch")
def attest_epoch_command(
    *,
    epoch: Annotated[int, typer.Option("--epoch", min=2, help="The new journal epoch (above the current one).")],
    attestation: Annotated[str, typer.Option("--attestation", min=1, max=500,
                                             help="The restore reconciliation it rests on (hashed).")],
    apply: ApplyOpt = False,
    operator: OperatorOpt = "operator",
    state_dir: StateDirOpt = Path(".restproof"),
    journal: JournalOpt = None,
    artifacts: ArtifactsOpt = None,
    output: FormatOpt = OutputFormat.TEXT,
) -> None:
    """Open the mutation gate under a new journal epoch after a restore (operator only)."""
    from sink.runtime.operator_decisions import attest_epoch  # noqa: PLC0415 - start-up cost

    report = guarded(output, lambda: attest_epoch(epoch, locations=locations(state_dir, journal, artifacts),
                                                  operator_id=operator, attestation=attestation, apply=apply))
    document = {"schema_id": "restproof.journal_gate.v1", "gate": report.state, "journal_epoch": report.journal_epoch,
                "applied": report.applied, "exit_code": 0}
    if output is OutputFormat.JSON:
        emit_json(document)
    else:
        verb = "gate" if report.applied else "gate (add --apply to attest)"
        typer.echo(f"{verb} {report.state} at journal epoch {report.journal_epoch}")
    raise typer.Exit(0)
